package web

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"prism/core"
	"prism/core/coretest"
	"prism/core/redact"
	"prism/views"
)

// childOfCalls returns a child's log of n calls, each result holding a
// secret, and the events of more calls that continue it.
func childOfCalls(tb testing.TB, n, more int) (*views.ChildLog, []core.Event) {
	tb.Helper()
	b := coretest.NewBuilder(1767225600000)
	b.TurnStart().StepStart().User("go")
	call := func(i int) {
		id := fmt.Sprintf("c%d", i)
		b.Call(id, "bash", `{"command":"cat .env"}`).Result(id, "TOKEN=sk-proj-Zq7mK2pL9xV4bN8cR1tY6wE3uI0oA5sD\n", false, nil, nil)
	}
	for i := range n {
		call(i)
	}
	c := &views.ChildLog{Header: core.SessionHeader{ID: "child", CreatedAt: 1767225600000, Cwd: "/work"}, Events: b.Events}
	k := len(b.Events)
	for i := range more {
		call(n + i)
	}
	return c, b.Events[k:]
}

// TestRedactedChild_onlyTheNewEvents: as a nested child's log grows event
// by event, the links' redacted copy of it equals the whole log's
// redaction each time, and redacting one more event costs about as many
// allocations on a child of 1,000 calls as on one of 10 — the new event's
// redaction, not the whole log's again.
func TestRedactedChild_onlyTheNewEvents(t *testing.T) {
	r, err := redact.New()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{deps: Deps{Redactor: r}}
	c, more := childOfCalls(t, 3, 3)
	s.linkChild(c, true, nil, "")
	for _, e := range more {
		if !c.Extend([]core.Event{e}) {
			t.Fatal("the child's log did not take its next event")
		}
		got := s.linkChild(c, true, nil, "")
		wantH, want, _ := r.Session(c.Header, c.Log())
		if diff := cmp.Diff(want, got.Log(), cmpopts.EquateEmpty()); diff != "" || !cmp.Equal(wantH, got.Header) {
			t.Fatalf("after event %d the redacted child differs from the whole log's redaction (-whole +kept):\n%s", e.Seq, diff)
		}
	}

	perEvent := func(calls int) float64 {
		s := &Server{deps: Deps{Redactor: r}}
		c, more := childOfCalls(t, calls, 50)
		s.linkChild(c, true, nil, "")
		i := 0
		return testing.AllocsPerRun(len(more)-1, func() {
			c.Extend(more[i : i+1])
			s.linkChild(c, true, nil, "")
			i++
		})
	}
	small, large := perEvent(10), perEvent(1000)
	if large > 2*small+10 {
		t.Errorf("redacting one more child event costs %.0f allocations on a child of 1,000 calls, %.0f on one of 10: the whole log is redacted again", large, small)
	}
}

// BenchmarkRedactedChildEvent: one more event of a nested child's log
// (a call or its result, with a secret) as the share links that nest it
// read it (Server.linkChild), on children of 10 and 1,000 calls.
func BenchmarkRedactedChildEvent(b *testing.B) {
	r, err := redact.New()
	if err != nil {
		b.Fatal(err)
	}
	for _, calls := range []int{10, 1000} {
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			s := &Server{deps: Deps{Redactor: r}}
			c, _ := childOfCalls(b, calls, 0)
			s.linkChild(c, true, nil, "")
			// The events appended: the child goes on with a tenth more
			// calls (at least 5); then a fresh child of the named length,
			// so the length stays within 50% (10 calls) or 10% (1,000)
			// of what is named.
			_, next := childOfCalls(b, calls, max(calls/10, 5))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(next) {
					b.StopTimer()
					s = &Server{deps: Deps{Redactor: r}}
					c, _ = childOfCalls(b, calls, 0)
					s.linkChild(c, true, nil, "")
					i = 0
					b.StartTimer()
				}
				c.Extend(next[i : i+1])
				s.linkChild(c, true, nil, "")
				i++
			}
		})
	}
}
