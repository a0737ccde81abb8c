package web

import (
	"context"
	"fmt"
	"strconv"
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
	if got := k.inFlight(context.Background(), src, sums, k.begin()); !got[0].ok || got[0].call != "read" {
		t.Fatalf("paint during a replace shows %+v, want read in flight", got[0])
	}
	if len(k.tail) != 0 {
		t.Errorf("a paint whose read ran during a replace kept %d tails, want none", len(k.tail))
	}
	k.inFlight(context.Background(), src, sums, k.begin())
	if src.reads != 2 {
		t.Errorf("the paint after a replace made %d reads in all, want 2 (it reads again)", src.reads)
	}
	if got := k.inFlight(context.Background(), src, sums, k.begin()); !got[0].ok || got[0].call != "read" || src.reads != 2 {
		t.Errorf("a paint with nothing moved: %+v after %d reads, want read in flight and no new read", got[0], src.reads)
	}
	k.inFlight(context.Background(), src, nil, k.begin())
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

// tailLogSource serves each session's log (EventsAfterEach) and records the
// reads: which sessions, after which seq.
type tailLogSource struct {
	SessionSource
	logs  map[string][]core.Event
	reads []map[string]int64
}

func (s *tailLogSource) EventsAfterEach(_ context.Context, after map[string]int64) (map[string][]core.Event, error) {
	s.reads = append(s.reads, after)
	out := map[string][]core.Event{}
	for id, seq := range after {
		for _, e := range s.logs[id] {
			if e.Seq > seq {
				out[id] = append(out[id], e)
			}
		}
	}
	return out, nil
}

// summaryOf is a running session's summary of log.
func summaryOf(id string, log []core.Event) SessionSummary {
	m := SessionSummary{ID: id, Summary: core.Summary{Status: core.StatusRunning, LastSeq: log[len(log)-1].Seq}}
	for _, e := range log {
		switch e.Type {
		case core.EventToolCall:
			m.Calls++
		case core.EventToolResult:
			m.Results++
		}
	}
	return m
}

// TestCallsInFlight_peeksThenReadsWide: a tail not known is read from its
// last inFlightPeek events when they hold every call its summary counts
// waiting; else (a call waiting further back, calls in parallel) it is
// read over inFlightTail events, so the board finds what reading
// inFlightTail at once finds — also once the latest call is answered.
func TestCallsInFlight_peeksThenReadsWide(t *testing.T) {
	busy := func(b *coretest.Builder, n int) {
		for j := range n {
			id := "d" + strconv.Itoa(j)
			b.Call(id, "write", `{}`).Result(id, "ok", false, nil, nil)
		}
	}
	recent := coretest.NewBuilder(1)
	recent.TurnStart().StepStart().User("go")
	busy(recent, 30)
	recent.Call("r1", "read", `{}`)
	older := coretest.NewBuilder(1) // a call waiting 40 events back
	older.TurnStart().StepStart().User("go").Call("o1", "grep", `{}`)
	busy(older, 20)
	parallel := coretest.NewBuilder(1) // two waiting, the older 30 events back
	parallel.TurnStart().StepStart().User("go").Call("p1", "glob", `{}`)
	busy(parallel, 15)
	parallel.Call("p2", "edit", `{}`)
	src := &tailLogSource{logs: map[string][]core.Event{"recent": recent.Events, "older": older.Events, "parallel": parallel.Events}}
	sums := []SessionSummary{summaryOf("recent", recent.Events), summaryOf("older", older.Events), summaryOf("parallel", parallel.Events)}
	tails := map[string]*callTail{}
	got := callsInFlight(context.Background(), src, sums, tails)
	for i, want := range []string{"read", "grep", "edit"} {
		if !got[i].ok || got[i].call != want {
			t.Errorf("session %s: in flight %+v, want %s", sums[i].ID, got[i], want)
		}
	}
	if len(src.reads) != 2 {
		t.Fatalf("%d reads, want 2 (the peek, then the wide read of two)", len(src.reads))
	}
	peek := map[string]int64{}
	for _, m := range sums {
		peek[m.ID] = m.LastSeq - inFlightPeek
	}
	if fmt.Sprint(src.reads[0]) != fmt.Sprint(peek) {
		t.Errorf("first read %v, want each session's last %d events %v", src.reads[0], inFlightPeek, peek)
	}
	wide := map[string]int64{"older": max(sums[1].LastSeq-inFlightTail, -1), "parallel": max(sums[2].LastSeq-inFlightTail, -1)}
	if fmt.Sprint(src.reads[1]) != fmt.Sprint(wide) {
		t.Errorf("second read %v, want the sessions the peek fell short of over %d events %v", src.reads[1], inFlightTail, wide)
	}
	// p2 answered: p1, found by the wide read, is in flight.
	n := len(parallel.Events)
	parallel.Result("p2", "done", false, nil, nil)
	src.logs["parallel"] = parallel.Events
	sums[2] = summaryOf("parallel", parallel.Events)
	tails["parallel"].take(parallel.Events[n:])
	got = callsInFlight(context.Background(), src, sums, tails)
	if !got[2].ok || got[2].call != "glob" {
		t.Errorf("parallel after p2's result: in flight %+v, want glob (p1)", got[2])
	}
}

// TestCallTail_decodesAsEncodingJSON: take reads a call's id and name and
// a result's call id as encoding/json (core.FactsOf) reads them, member
// names matched without regard to case, the content of a result not
// needed.
func TestCallTail_decodesAsEncodingJSON(t *testing.T) {
	ev := func(seq int64, typ, data string) core.Event {
		return core.Event{Seq: seq, Type: typ, Time: 100 + seq, Data: []byte(data)}
	}
	events := []core.Event{
		ev(0, core.EventToolCall, `{"callId":"a","name":"read","input":{"callId":"nested"}}`),
		ev(1, core.EventToolCall, `{"CALLID":"b","Name":"grep"}`),
		ev(2, core.EventToolCall, `{"callId":"c","name":"glob"}`),
		ev(3, core.EventToolResult, `{"message":{"role":"tool","content":[{"type":"tool_result","text":"x"}],"source":{"callId":"c"}}}`),
		ev(4, core.EventToolResult, `{"Message":{"Source":{"CallId":"a"}}}`),
	}
	for _, e := range events[3:] {
		f := core.FactsOf(&e)
		if id := map[int64]string{3: "c", 4: "a"}[e.Seq]; f.CallID() != id {
			t.Fatalf("the fixture: FactsOf(seq %d).CallID() = %q, want %q", e.Seq, f.CallID(), id)
		}
	}
	tl := &callTail{last: -1}
	if !tl.take(events) {
		t.Fatal("take found a gap in contiguous events")
	}
	if len(tl.open) != 1 || tl.open[0] != (openCall{id: "b", name: "grep", at: 101}) {
		t.Errorf("open calls %+v, want b (grep) only", tl.open)
	}
}

// TestBoardTails_replacedAfterTheListingIsNotKept: a GET /board whose
// summaries were listed before a log was replaced, but whose tails are
// read after the replace was forgotten, keeps nothing of that paint — so
// the next paint, with the new log's summary, reads the new log and shows
// its call in flight (found in review: the old summary's LastSeq was kept
// as read, and the new, shorter log's call was never shown).
func TestBoardTails_replacedAfterTheListingIsNotKept(t *testing.T) {
	k := newBoardTails()
	b := coretest.NewBuilder(1)
	b.TurnStart().StepStart().User("go").Call("c1", "read", `{}`)
	src := &replacingSource{log: b.Events}
	newLast := b.Events[len(b.Events)-1].Seq
	gen := k.begin() // the paint starts, then lists the old log's summary
	stale := []SessionSummary{{ID: "s", Summary: core.Summary{Status: core.StatusRunning, LastSeq: 100, Calls: 3, Results: 3}}}
	k.forget("s") // the replace's OnReplace lands before the tails are read
	k.inFlight(context.Background(), src, stale, gen)
	fresh := []SessionSummary{{ID: "s", Summary: core.Summary{Status: core.StatusRunning, LastSeq: newLast, Calls: 1}}}
	if got := k.inFlight(context.Background(), src, fresh, k.begin()); !got[0].ok || got[0].call != "read" {
		kept := int64(-2)
		if tl := k.tail["s"]; tl != nil {
			kept = tl.last
		}
		t.Errorf("after a paint listed before a replace, the new log's call in flight is not shown: %+v (kept tail last=%d, new LastSeq %d)", got[0], kept, newLast)
	}
}
