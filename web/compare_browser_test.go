package web_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// manyReads is a session of n reads in one step; the read at index
// changed asks for another file.
func manyReads(n, changed int) []core.Event {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("Read them all.")
	for i := range n {
		file := fmt.Sprintf("f%03d.go", i)
		if i == changed {
			file = "other.go"
		}
		args := `{"file_path":` + strconv.Quote(file) + `}`
		id := fmt.Sprintf("c%d", i)
		b.Assistant("", [3]string{id, "read", args})
		b.Call(id, "read", args)
		b.Result(id, "package f", false, nil, nil)
	}
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

// TestCompareBrowser_nextDifference: a scripted change of one argument
// gives exactly one differing pair, reached with one press of n from the
// top of the page, focused and scrolled into view; p stays on it (it is
// the first); at 390 px the sides stack.
func TestCompareBrowser_nextDifference(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "a", manyReads(60, -1))
	e.session(t, "b", manyReads(60, 45))
	for _, w := range []int{1280, 390} {
		t.Run(strconv.Itoa(w), func(t *testing.T) {
			b := newBrowser(t, w, 800)
			b.do(t, chromedp.Navigate(e.ts.URL+views.CompareURL("a", "b")), chromedp.WaitReady(chromedp.CSS(`[data-testid="compare-rows"]`)))
			b.waitJS(t, `document.querySelector('script[src*="compare.js"]') !== null && document.readyState === 'complete'`)
			if n := evalIn[int](t, b, `document.querySelectorAll('.cmp-row.differs').length`); n != 1 {
				t.Fatalf("%d differing rows, want 1", n)
			}
			want := evalIn[string](t, b, `document.querySelector('.cmp-row.differs').id`)
			if evalIn[bool](t, b, `(() => { const r = document.getElementById(`+jsString(want)+`).getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight })()`) {
				t.Fatal("the differing row is in view before n: the test proves nothing")
			}
			b.do(t, chromedp.KeyEvent("n"))
			if got := evalIn[string](t, b, `document.activeElement.id`); got != want {
				t.Fatalf("n: focus on %q, want the differing row %q", got, want)
			}
			b.waitJS(t, `(() => { const r = document.activeElement.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight })()`)
			if pos := evalIn[string](t, b, `document.querySelector('[data-testid="compare-pos"]').textContent`); pos != "1 of 1" {
				t.Errorf("position %q, want 1 of 1", pos)
			}
			b.do(t, chromedp.KeyEvent("p"))
			if got := evalIn[string](t, b, `document.activeElement.id`); got != want {
				t.Errorf("p from the first difference: focus on %q, want it to stay on %q", got, want)
			}
			cols := evalIn[string](t, b, `getComputedStyle(document.getElementById(`+jsString(want)+`)).gridTemplateColumns.split(' ').length + ''`)
			if wantCols := map[int]string{1280: "3", 390: "1"}[w]; cols != wantCols {
				t.Errorf("at %d px the row has %s columns, want %s", w, cols, wantCols)
			}
			if over := evalIn[bool](t, b, `document.documentElement.scrollWidth > innerWidth`); over {
				t.Errorf("at %d px the page scrolls sideways", w)
			}
		})
	}
}
