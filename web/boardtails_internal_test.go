package web

import (
	"context"
	"testing"

	"prism/core"
	"prism/core/coretest"
)

// replacingSource is a SessionSource whose EventsAfterEach returns log
// and, while the read is under way, has the session's log replaced
// (during, called before it returns).
type replacingSource struct {
	SessionSource
	log    []core.Event
	during func()
	reads  int
}

func (s *replacingSource) EventsAfterEach(_ context.Context, after map[string]int64) (map[string][]core.Event, error) {
	s.reads++
	if s.during != nil {
		s.during()
		s.during = nil
	}
	out := map[string][]core.Event{}
	for id, seq := range after {
		for _, e := range s.log {
			if e.Seq > seq {
				out[id] = append(out[id], e)
			}
		}
	}
	return out, nil
}

// TestBoardTails_replacedDuringAPaintIsNotKept: a paint whose read ran
// while a log was replaced shows what it read but keeps none of it, so
// the next paint reads again; a paint with no replace meanwhile keeps
// its reads (the one after reads nothing), and a session no longer
// running is dropped.
func TestBoardTails_replacedDuringAPaintIsNotKept(t *testing.T) {
	b := coretest.NewBuilder(1)
	b.TurnStart().StepStart().User("go").Call("c1", "read", `{}`)
	last := b.Events[len(b.Events)-1].Seq
	sums := []SessionSummary{{ID: "s", Summary: core.Summary{Status: core.StatusRunning, LastSeq: last, Calls: 1}}}
	k := newBoardTails()
	src := &replacingSource{log: b.Events}
	src.during = func() { k.forget("s") }
	if got := k.inFlight(context.Background(), src, sums); !got[0].ok || got[0].call != "read" {
		t.Fatalf("paint during a replace shows %+v, want read in flight", got[0])
	}
	if len(k.tail) != 0 {
		t.Errorf("a paint whose read ran during a replace kept %d tails, want none", len(k.tail))
	}
	k.inFlight(context.Background(), src, sums)
	if src.reads != 2 {
		t.Errorf("the paint after a replace made %d reads in all, want 2 (it reads again)", src.reads)
	}
	if got := k.inFlight(context.Background(), src, sums); !got[0].ok || got[0].call != "read" || src.reads != 2 {
		t.Errorf("a paint with nothing moved: %+v after %d reads, want read in flight and no new read", got[0], src.reads)
	}
	k.inFlight(context.Background(), src, nil)
	if len(k.tail) != 0 {
		t.Errorf("a session no longer running is still known: %d tails", len(k.tail))
	}
}

// TestCallsInFlight_neverChangesAKnownTail: callsInFlight applies a read
// to a copy, so a tail another paint holds is left as it was.
func TestCallsInFlight_neverChangesAKnownTail(t *testing.T) {
	b := coretest.NewBuilder(1)
	b.TurnStart().StepStart().User("go").Call("c1", "read", `{}`)
	seq := b.Events[len(b.Events)-1].Seq
	held := &callTail{last: seq, open: []openCall{{id: "c1", name: "read", at: 1}}}
	b.Result("c1", "ok", false, nil, nil).Call("c2", "grep", `{}`)
	src := &replacingSource{log: b.Events}
	sums := []SessionSummary{{ID: "s", Summary: core.Summary{LastSeq: b.Events[len(b.Events)-1].Seq, Calls: 2, Results: 1}}}
	tails := map[string]*callTail{"s": held}
	got := callsInFlight(context.Background(), src, sums, tails)
	if !got[0].ok || got[0].call != "grep" {
		t.Errorf("in flight %+v, want grep", got[0])
	}
	if held.last != seq || len(held.open) != 1 || held.open[0].name != "read" {
		t.Errorf("the held tail was changed: %+v", held)
	}
}
