package db

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/store/storetest"
)

// TestEventsReadBackSurfaceOps: every event query gives back each event as
// appended — its data, small or larger than a shared block, and its surface
// op, none, "append" or a replacement — each event its own op (changing
// one changes no other).
func TestEventsReadBackSurfaceOps(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	storetest.MustCreate(t, st, "s")
	user := func(id, text string) []byte {
		return []byte(`{"id":"` + id + `","role":"user","content":[{"type":"text","text":"` + text + `"}],"source":{"kind":"user"}}`)
	}
	want := []core.Event{
		{Type: core.EventTurnStart, Seq: 0, Time: 1, Data: []byte(`{"turn":1}`)},
		{Type: core.EventStepStart, Seq: 1, Time: 2, Data: []byte(`{"turn":1,"step":1}`)},
		{Type: core.EventUserMessage, Seq: 2, Time: 3, Data: user("u1", "one"), SurfaceOp: core.AppendOp()},
		{Type: core.EventUserMessage, Seq: 3, Time: 4, Data: user("u2", "two"), SurfaceOp: core.AppendOp()},
		{Type: core.EventUserMessage, Seq: 4, Time: 5, Data: user("s", "summary"), SurfaceOp: &core.SurfaceOp{Replace: true, Start: 2, End: 3}, SourceEventSeqs: []int64{2, 3}},
		{Type: core.EventUserMessage, Seq: 5, Time: 6, Data: user("u3", "three"), SurfaceOp: core.AppendOp()},
		// Larger than a shared block of a short query: a block of its own.
		{Type: core.EventUserMessage, Seq: 6, Time: 7, Data: user("u4", strings.Repeat("long ", 8000)), SurfaceOp: core.AppendOp()},
		{Type: core.EventUserMessage, Seq: 7, Time: 8, Data: user("u5", "after"), SurfaceOp: core.AppendOp()},
	}
	if err := st.AppendEvents(ctx, "s", want); err != nil {
		t.Fatal(err)
	}
	l, err := st.LoadSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	after, err := st.EventsAfter(ctx, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]core.Event{"LoadSession": l.Events, "EventsAfter": append(append([]core.Event(nil), l.Events[:3]...), after...)} {
		if d := cmp.Diff(storetest.EventJSON(want), storetest.EventJSON(got)); d != "" {
			t.Fatalf("%s (-appended +read):\n%s", name, d)
		}
		for i := range got {
			if (got[i].SurfaceOp == nil) != (want[i].SurfaceOp == nil) || got[i].SurfaceOp != nil && *got[i].SurfaceOp != *want[i].SurfaceOp {
				t.Fatalf("%s: event %d has surface op %+v, want %+v", name, i, got[i].SurfaceOp, want[i].SurfaceOp)
			}
		}
	}
	l.Events[2].SurfaceOp.Replace = true
	if l.Events[3].SurfaceOp.Replace || l.Events[5].SurfaceOp.Replace {
		t.Fatal("events read together share one surface op")
	}
}
