package web_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core/model"
)

// TestDemo_SummaryHolds: the demo's closing summary is true to the page it
// ends. Each row of its table names a step's tools (with ×N counts) and
// what they showed; the page's step of that row has exactly those cards,
// of the kinds and outcomes claimed; the error codes it names are the
// failure cards' identities; the prompt is the one the narration answers.
func TestDemo_SummaryHolds(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "demo", demoEvents(t))
	_, page := e.get(t, "/sessions/demo")
	d := doc(t, page)

	if got := d.Find(`[data-testid="transcript"] .msg.user`).First().Text(); !strings.Contains(got, model.DemoPrompt) {
		t.Errorf("first user message = %q, want the demo prompt", got)
	}
	steps := d.Find(`[data-testid="step"]`)
	final := steps.Last().Find(`[data-testid="assistant-message"]`).Last()
	rows := final.Find("table tbody tr")
	if rows.Length() == 0 {
		t.Fatal("the demo's summary has no table")
	}
	next := 0 // the first step no row has claimed yet
	toolRe := regexp.MustCompile("^([a-z_]+)(?: ×([0-9]+))?$")
	rows.Each(func(i int, row *goquery.Selection) {
		cells := row.Find("td")
		what := cells.Eq(2).Text()
		// Tools named in the row: the step's cards, tool by tool.
		want := map[string]int{}
		total := 0
		if cell := strings.TrimSpace(cells.Eq(1).Text()); cell != "four calls" {
			for _, name := range strings.Split(cell, ", ") {
				m := toolRe.FindStringSubmatch(name)
				if m == nil {
					t.Fatalf("row %d: cannot read tool %q", i, name)
				}
				n := 1
				if m[2] != "" {
					n, _ = strconv.Atoi(m[2])
				}
				want[m[1]] += n
				total += n
			}
		}
		if strings.Contains(cells.Eq(1).Text(), "four calls") {
			total = 4
		}
		// A row tells of the next steps, as many as hold its calls.
		step := steps.Slice(next, next)
		for step.Find(`[data-testid="tool-card"]`).Length() < total && next < steps.Length()-1 {
			step = step.AddSelection(steps.Eq(next))
			next++
		}
		cards := step.Find(`[data-testid="tool-card"]`)
		if cards.Length() != total {
			t.Errorf("row %q: its steps have %d cards, the summary says %d", row.Text(), cards.Length(), total)
		}
		for tool, n := range want {
			got := cards.FilterFunction(func(_ int, c *goquery.Selection) bool { return c.Find(".tool").Text() == tool }).Length()
			if got != n {
				t.Errorf("row %q: %d %s cards, the summary says %d", row.Text(), got, tool, n)
			}
		}
		// What they showed.
		kinds := map[string]string{"two searches": "search", "diffs": "diff", "line-numbered files": "read", "a command that succeeds": "terminal", "note card": "generic"}
		for phrase, kind := range kinds {
			if strings.Contains(what, phrase) && cards.Filter(`[data-card="`+kind+`"]`).Length() == 0 {
				t.Errorf("row %q claims %q but the step has no %s card", row.Text(), phrase, kind)
			}
		}
		if strings.Contains(what, "a window of lines") && step.Find(".read .window").Length() == 0 {
			t.Errorf("row %q claims a windowed read; none is shown", row.Text())
		}
		if strings.Contains(what, "a command that succeeds and one that exits with code 1") {
			var exits []string
			cards.Find(`[data-testid="exit"]`).Each(func(_ int, s *goquery.Selection) { exits = append(exits, strings.TrimSpace(s.Text())) })
			if strings.Join(exits, ",") != "exit code 1" || cards.First().AttrOr("data-state", "") != "ok" {
				t.Errorf("row %q: exits shown %v, first card %s", row.Text(), exits, cards.First().AttrOr("data-state", ""))
			}
		}
		if strings.Contains(what, "INVALID_ARGS twice") {
			var ids []string
			cards.Find(`[data-testid="error-identity"]`).Each(func(_ int, s *goquery.Selection) {
				_, code, _ := strings.Cut(s.Text(), " · ")
				ids = append(ids, code)
			})
			if strings.Join(ids, ",") != "INVALID_ARGS,UNKNOWN_TOOL,INVALID_ARGS,FS_NOT_FOUND" {
				t.Errorf("row %q: the failure cards' codes are %v", row.Text(), ids)
			}
		}
	})
	if next != steps.Length()-1 {
		t.Errorf("the summary tells of %d steps; the turn has %d before it", next, steps.Length()-1)
	}
	// The closing claim: the same cards come back on a reload.
	_, again := e.get(t, "/sessions/demo")
	if a, b := cardHTML(t, page), cardHTML(t, again); a != b {
		t.Error("a reload draws other cards")
	}
}

func cardHTML(t *testing.T, page string) string {
	var b strings.Builder
	doc(t, page).Find(`[data-testid="tool-card"]`).Each(func(_ int, s *goquery.Selection) {
		h, _ := goquery.OuterHtml(s)
		b.WriteString(h)
	})
	return b.String()
}
