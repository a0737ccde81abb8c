package web_test

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/core/price"
	"prism/views"
	"prism/web"
)

// modelTurn is a turn whose assistant messages answer from models[i] with
// usage[i] (input, output).
func modelTurn(b *coretest.Builder, models []string, usage [][2]int64) {
	b.TurnStart().StepStart().User("go")
	for i, m := range models {
		msg := core.Message{ID: "a" + m, Role: core.RoleAssistant, Content: core.Text("ok"), Source: core.Source{Kind: core.SourceModel, Model: m}}
		b.Add(core.EventAssistantMessage, core.AssistantMessage{Turn: 1, Step: 1, Message: msg,
			Usage: &core.TokenUsage{InputTokens: usage[i][0], OutputTokens: usage[i][1]}}, core.AppendOp())
	}
	b.StepEnd().TurnEnd(core.TurnCompleted)
}

// TestList_ModelTokensCost: the list shows each session's model, its tokens
// in and out (compact, spelled out in the title) and, with a price table,
// its cost — the very value the session page's header shows, for a session
// on one model (the demo) and one that switched to a model the table does
// not price. Without a table there is no cost column.
func TestList_ModelTokensCost(t *testing.T) {
	tab, err := price.Parse([]byte(`{"demo": {"input": 1000, "output": 2000}, "big": {"input": 3, "output": 15}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, priced := range []bool{true, false} {
		e := newEnv(t, func(d *web.Deps) {
			if priced {
				d.Prices = tab
			}
		})
		e.session(t, "demo", demoEvents(t))
		b := coretest.NewBuilder(t0)
		modelTurn(b, []string{"big", "tiny", "big"}, [][2]int64{{120000, 3000}, {4000, 500}, {30000, 1000}})
		e.session(t, "mixed", b.Events)

		_, list := e.get(t, "/")
		ld := doc(t, list)
		if got := ld.Find(`table.sessions th:contains("cost")`).Length(); got != map[bool]int{true: 1, false: 0}[priced] {
			t.Errorf("priced %v: %d cost headers", priced, got)
		}
		for _, c := range []struct{ id, model, tokens, cost string }{
			{"demo", "demo", "", ""},
			{"mixed", "big, tiny", "154k / 4.5k", "≥ $0.5100"},
		} {
			row := ld.Find(`tr[data-session-id="` + c.id + `"]`)
			_, page := e.get(t, views.SessionURL(c.id))
			pd := doc(t, page)
			if got := text(row.Find(`[data-testid="row-model"]`)); got != c.model {
				t.Errorf("%s: model %q, want %q", c.id, got, c.model)
			}
			// The header's "N in · M out" is the row's title, spelled out.
			f := strings.Fields(text(pd.Find(`[data-testid="stat-tokens"]`)))
			tokens := row.Find(`[data-testid="row-tokens"] span`)
			if want := f[0] + " input tokens, " + f[3] + " output tokens"; tokens.AttrOr("title", "") != want {
				t.Errorf("%s: tokens title %q, want %q", c.id, tokens.AttrOr("title", ""), want)
			}
			if want := views.CompactCount(int64(atoi(t, f[0]))) + " / " + views.CompactCount(int64(atoi(t, f[3]))); text(tokens) != want || c.tokens != "" && want != c.tokens {
				t.Errorf("%s: tokens %q, want %q (%s)", c.id, text(tokens), want, c.tokens)
			}
			cost, stat := row.Find(`[data-testid="row-cost"]`), pd.Find(`[data-testid="stat-cost"]`)
			if !priced {
				if cost.Length() != 0 || stat.Length() != 0 {
					t.Errorf("%s: a cost without a price table", c.id)
				}
				continue
			}
			if text(cost) == "" || text(cost) != text(stat) {
				t.Errorf("%s: list cost %q, session header cost %q", c.id, text(cost), text(stat))
			}
			if c.cost != "" && text(cost) != c.cost {
				t.Errorf("%s: cost %q, want %q", c.id, text(cost), c.cost)
			}
			if note := stat.AttrOr("title", ""); note != "" && cost.Find("span").AttrOr("title", "") != note {
				t.Errorf("%s: list cost note %q, header's %q", c.id, cost.Find("span").AttrOr("title", ""), note)
			}
			if !strings.Contains(text(row.Find(`[data-testid="row-usage-narrow"]`)), text(stat)) {
				t.Errorf("%s: the phone line %q lacks the cost", c.id, text(row.Find(`[data-testid="row-usage-narrow"]`)))
			}
		}
	}
}

// TestListStream_UpdatesUsage: the live list morphs a row's model, tokens
// and cost as its session's log grows.
func TestListStream_UpdatesUsage(t *testing.T) {
	tab, err := price.Parse([]byte(`{"big": {"input": 3, "output": 15}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(d *web.Deps) { d.Prices = tab; d.Tuning.ListThrottle = 1 })
	e.session(t, "s", nil)
	sc := e.stream(t, "/stream")
	if first := sc.next(t); !strings.Contains(first.Elements(), `data-session-id="s"`) {
		t.Fatalf("the list stream's first frame lacks the session: %s", first.Elements())
	}
	b := coretest.NewBuilder(t0)
	modelTurn(b, []string{"big"}, [][2]int64{{1_000_000, 100_000}})
	e.append(t, "s", b.Events...)
	evs := sc.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "1M / 100k") })
	row := doc(t, "<table>"+evs[len(evs)-1].Elements()+"</table>")
	if got := text(row.Find(`[data-testid="row-model"]`)); got != "big" {
		t.Errorf("live row model %q", got)
	}
	if got := text(row.Find(`[data-testid="row-cost"]`)); got != "$4.50" { // 3 + 0.1 × 15
		t.Errorf("live row cost %q, want $4.50", got)
	}
}

func text(s *goquery.Selection) string { return strings.TrimSpace(s.Text()) }
