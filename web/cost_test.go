package web_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core/price"
	"prism/web"
)

// TestPages_Costs: with a price table, each step's and turn's token line
// and the session header carry the cost at the table's prices; a model the
// table does not price says so instead of a wrong sum; without a table no
// cost is shown.
func TestPages_Costs(t *testing.T) {
	events := demoEvents(t)
	for _, tt := range []struct {
		name, table, stat string
		step              string // the first step's cost
	}{
		{"priced", `{"demo": {"input": 1000, "output": 2000}}`, "", ""},
		{"unpriced", `{"other": {"input": 1, "output": 1}}`, "unknown", "· cost unknown"},
		{"none", ``, "", ""},
	} {
		var tab price.Table
		if tt.table != "" {
			var err error
			if tab, err = price.Parse([]byte(tt.table)); err != nil {
				t.Fatal(err)
			}
		}
		e := newEnv(t, func(d *web.Deps) { d.Prices = tab })
		e.session(t, "s", events)
		_, page := e.get(t, "/sessions/s")
		d := doc(t, page)
		stat := d.Find(`[data-testid="stat-cost"]`)
		steps := d.Find(`[data-testid="step-usage"]`)
		if steps.Length() == 0 {
			t.Fatalf("%s: no step token lines", tt.name)
		}
		switch tt.name {
		case "none":
			if stat.Length() != 0 || d.Find(`[data-testid$="-cost"]`).Length() != 0 {
				t.Errorf("%s: costs shown without a price table", tt.name)
			}
		case "unpriced":
			if got := strings.TrimSpace(stat.Text()); got != tt.stat || !strings.Contains(stat.AttrOr("title", ""), `no price for "demo"`) {
				t.Errorf("%s: session cost %q (%s)", tt.name, got, stat.AttrOr("title", ""))
			}
			if got := strings.TrimSpace(steps.First().Find(".cost").Text()); got != tt.step {
				t.Errorf("%s: step cost %q, want %q", tt.name, got, tt.step)
			}
		case "priced":
			// The demo's scripted usage: the header's tokens at 1000/2000
			// USD per 1M = 0.001/0.002 per token.
			var in, out int
			steps.Each(func(_ int, s *goquery.Selection) {
				f := strings.Fields(s.Text()) // "N in · M out · $X"
				in += atoi(t, f[0])
				out += atoi(t, f[3])
			})
			want := price.Format(float64(in)*0.001 + float64(out)*0.002)
			if got := strings.TrimSpace(stat.Text()); got != want {
				t.Errorf("session cost %q, want %q (from %d in, %d out)", got, want, in, out)
			}
			if turn := d.Find(`[data-testid="turn-usage-cost"]`); strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(turn.Text()), "·")) != want {
				t.Errorf("turn cost %q, want %q (one turn)", turn.Text(), want)
			}
			// The page at an event (time travel's own fold) prices the
			// steps it shows as the live page does.
			_, at := e.get(t, "/sessions/s?at="+strconv.Itoa(len(events)/2))
			atSteps := doc(t, at).Find(`[data-testid="step-usage"]`)
			if atSteps.Length() == 0 {
				t.Fatal("the page at an event shows no step token lines")
			}
			atSteps.Each(func(i int, s *goquery.Selection) {
				if c := strings.TrimSpace(s.Find(".cost").Text()); !strings.HasPrefix(c, "· $") {
					t.Errorf("at an event: step %d's cost %q", i, c)
				}
			})
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range strings.ReplaceAll(s, ",", "") {
		if r < '0' || r > '9' {
			t.Fatalf("not a count: %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}
