package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/store"
)

// testModelUsage: a session's models and their usage (migration
// 0006) are stored on its row — the list and Session read what the fold
// computed — and a row written before them (an older summary_version) gets
// them back from its log on open.
func testModelUsage(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	MustCreate(t, st, "s")
	msg := func(seq int64, model string, in, out, cached int64) core.Event {
		return Ev(seq, core.EventAssistantMessage, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"p","model":%q}},"usage":{"inputTokens":%d,"outputTokens":%d,"cacheReadTokens":%d}}`, seq, model, in, out, cached))
	}
	events := []core.Event{Ev(0, core.EventTurnStart, `{"turn":1}`), msg(1, "big", 1000, 100, 400), msg(2, "small", 50, 5, 0), msg(3, "big", 10, 1, 0)}
	if err := st.AppendEvents(ctx, "s", events); err != nil {
		t.Fatal(err)
	}
	want := []core.ModelUsage{
		{Model: "big", TokenUsage: core.TokenUsage{InputTokens: 1010, OutputTokens: 101, CacheReadTokens: 400}},
		{Model: "small", TokenUsage: core.TokenUsage{InputTokens: 50, OutputTokens: 5}},
	}
	check := func(when string) {
		t.Helper()
		got, err := st.Session(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got.Models); d != "" || got.Model != "big, small" {
			t.Errorf("%s: Session model %q, models (-want +got):\n%s", when, got.Model, d)
		}
		page, err := st.ListSessions(ctx, store.ListOptions{})
		if err != nil || len(page.Sessions) != 1 {
			t.Fatalf("%s: list %+v, %v", when, page, err)
		}
		if d := cmp.Diff(core.Summarize(events), page.Sessions[0].Summary); d != "" {
			t.Errorf("%s: listed summary differs from the log's fold (-fold +listed):\n%s", when, d)
		}
	}
	check("stored")
	cols := e.Strings(t, st, "SELECT model || ' | ' || model_usage FROM sessions WHERE id = 's'")
	if len(cols) != 1 {
		t.Fatalf("model columns: %q", cols)
	}
	model, usage, _ := strings.Cut(cols[0], " | ")
	if wantUsage := `[{"model":"big","inputTokens":1010,"outputTokens":101,"cacheReadTokens":400},{"model":"small","inputTokens":50,"outputTokens":5}]`; model != "big, small" || usage != wantUsage {
		t.Errorf("columns model %q model_usage %s, want %q %s", model, usage, "big, small", wantUsage)
	}
	e.Exec(t, st, "UPDATE sessions SET summary_version = 2, model = '', model_usage = ''")
	st.Close()
	st = reopen(Options{})
	check("reopened after an older summary_version")
}
