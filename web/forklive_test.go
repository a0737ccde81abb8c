package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/views"
	"prism/web"
)

// TestFork_ReachesTheListAndTheSourceHeaderLive: a fork created while the
// list and the source's page are open (the store's CreateFork, as the
// runner makes one) reaches both without a reload — its row is prepended
// to the list, the source's row counts it, and the source's header names
// "1 fork".
func TestFork_ReachesTheListAndTheSourceHeaderLive(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { withNotes(d); d.Tuning.ListThrottle = 1 })
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Assistant("hello").StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "src", b.Events)
	list := e.stream(t, "/stream")
	list.next(t)
	page := e.stream(t, "/sessions/src/stream?after="+itoa(b.Events[len(b.Events)-1].Seq))

	createFork(t, e, "src", "f1", b.Events)

	var prepended, counted bool
	list.until(t, func(ev sseEvent) bool {
		el := ev.Elements()
		if strings.Contains(el, `data-session-id="f1"`) && ev.field("mode") == "prepend" {
			prepended = true
		}
		if strings.Contains(el, `data-session-id="src"`) && strings.Contains(el, `data-testid="row-forks"`) && strings.Contains(el, "1 fork") {
			counted = true
		}
		return prepended && counted
	})
	page.until(t, func(ev sseEvent) bool {
		el := ev.Elements()
		return ev.field("selector") == views.SessionIdentitySelector && ev.field("mode") == "" &&
			strings.Contains(el, `data-testid="forks-tree"`) && strings.Contains(el, "1 fork")
	})
}

// createFork forks session src of events after its turn 1 into id
// through the store, as the runner does (CreateFork: the fork's row, seed
// and fork note in one transaction).
func createFork(t *testing.T, e *env, src, id string, events []core.Event) {
	t.Helper()
	turn := 1
	n, err := core.ForkPrefix(src, events, core.ForkBoundary{AtTurn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	h, seed, err := core.ForkSeed(core.SessionHeader{ID: id, CreatedAt: t0 + 1000, Cwd: "/work", ParentSession: src}, events, n, t0+1000)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(notes.ForkData{Session: id, SeedLength: int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	at := int64(n) - 1
	if err := e.store.CreateFork(context.Background(), h, seed, notes.Input{Session: src, Kind: notes.KindFork, AtSeq: &at, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// TestBrowser_ForkReachesTheSourceHeader: the source's open page names a
// new fork in its header without a reload — the identity stats morphed in
// place by their selector, the live stats beside them kept.
func TestBrowser_ForkReachesTheSourceHeader(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Assistant("hello").StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "src", b.Events)
	br := newBrowser(t, 1280, 900)
	br.do(t, chromedp.Navigate(e.ts.URL+"/sessions/src"), chromedp.WaitReady(chromedp.CSS(`#session-status[data-status="idle"]`)))
	if evalIn[bool](t, br, `!!document.querySelector('[data-testid="forks"]')`) {
		t.Fatal("a session without forks names forks")
	}
	createFork(t, e, "src", "f1", b.Events)
	br.waitJS(t, `(document.querySelector('[data-testid="forks-tree"]')?.textContent ?? '').includes('1 fork')`)
	if n := evalIn[int](t, br, `document.querySelectorAll('#session-head > dl.stats').length`); n != 2 {
		t.Errorf("the header holds %d stats lists after the patch, want 2 (identity and live)", n)
	}
	if !evalIn[bool](t, br, `!!document.querySelector('#session-head > #session-stats')`) {
		t.Error("the live stats are gone after the patch")
	}
}
