package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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

	turn := 1
	n, err := core.ForkPrefix("src", b.Events, core.ForkBoundary{AtTurn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	h, seed, err := core.ForkSeed(core.SessionHeader{ID: "f1", CreatedAt: t0 + 1000, Cwd: "/work", ParentSession: "src"}, b.Events, n, t0+1000)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(notes.ForkData{Session: "f1", SeedLength: int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	at := int64(n) - 1
	if err := e.store.CreateFork(context.Background(), h, seed, notes.Input{Session: "src", Kind: notes.KindFork, AtSeq: &at, Data: data}); err != nil {
		t.Fatal(err)
	}

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
