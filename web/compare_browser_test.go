package web_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
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
			b := newBrowser(t, w, 420) // short: the differing row starts out of view
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
			// Its top in view, below the sticky bar.
			b.waitJS(t, `(() => { const r = document.activeElement.getBoundingClientRect(); const bar = document.querySelector('[data-testid="compare-nav"]').getBoundingClientRect();
			  return r.top >= bar.bottom - 1 && r.top < innerHeight })()`)
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

// TestCompareBrowser_live: comparing a running session with its source
// updates in the browser as the running one commits a call.
func TestCompareBrowser_live(t *testing.T) {
	e := newEnv(t, nil)
	full := manyReads(5, -1)
	e.session(t, "src", full)
	open := len(full) - 2 // b stops before its step and turn end
	e.session(t, "run", full[:open-3])
	b := newBrowser(t, 1280, 800)
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fetchProbe}); err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Navigate(e.ts.URL+views.CompareURL("src", "run")), chromedp.WaitReady(chromedp.CSS(`[data-testid="compare-rows"]`)))
	if got := evalIn[string](t, b, `[...document.querySelectorAll('[data-testid="compare-row"]')].map(r => r.dataset.mark).join(',')`); got != "same,same,same,same,deleted" {
		t.Fatalf("before: marks %s", got)
	}
	// The stream's request has started (a commit the stream's
	// subscription misses is still newer than the seqs the page shows,
	// so the stream renders it at once).
	b.waitJS(t, `window.__open === 1`)
	e.append(t, "run", full[open-3:]...)
	b.waitJS(t, `[...document.querySelectorAll('[data-testid="compare-row"]')].map(r => r.dataset.mark).join(',') === 'same,same,same,same,same'`)
	if got := evalIn[string](t, b, `document.querySelector('[data-testid="compare-verdict"]').textContent`); !strings.Contains(got, "No differences") {
		t.Errorf("verdict after the commit: %q", got)
	}
}
