package storetest

import (
	"context"
	"fmt"
	"testing"

	"prism/core"
)

// testEventsAfterEach: EventsAfterEach reads several sessions' tails in one
// call, each equal to that session's EventsAfter (envelopes restored);
// a session without events after its seq is absent or empty, an unknown
// one absent, and an empty request reads nothing.
func testEventsAfterEach(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	after := map[string]int64{}
	for i := range 4 {
		id := fmt.Sprintf("tail-%d", i)
		if err := st.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: 1764500000000}); err != nil {
			t.Fatal(err)
		}
		var events []core.Event
		for turn := range i + 1 {
			events = append(events, TurnEvents(int64(8*turn), turn+1, false)...)
		}
		if err := st.AppendEvents(ctx, id, events); err != nil {
			t.Fatal(err)
		}
		after[id] = int64(len(events)) - 3 - int64(i) // a different cut each
	}
	after["tail-0"] = 7 // at its last event: nothing after it
	if err := st.CreateSession(ctx, core.SessionHeader{ID: "tail-empty", CreatedAt: 1764500000000}); err != nil {
		t.Fatal(err)
	}
	after["tail-empty"] = -1
	after["no-such-session"] = -1
	got, err := st.EventsAfterEach(ctx, after)
	if err != nil {
		t.Fatalf("EventsAfterEach = %v", err)
	}
	if evs, ok := got["no-such-session"]; ok {
		t.Errorf("an unknown session's tail = %d events, want it absent", len(evs))
	}
	for _, id := range []string{"tail-0", "tail-empty"} {
		if len(got[id]) != 0 {
			t.Errorf("session %s after its last event = %d events, want none", id, len(got[id]))
		}
	}
	for id, seq := range after {
		if id == "no-such-session" {
			continue
		}
		want, err := st.EventsAfter(ctx, id, seq)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[id]) != len(want) {
			t.Errorf("session %s after %d = %d events, want %d (EventsAfter's)", id, seq, len(got[id]), len(want))
			continue
		}
		for k := range want {
			g, w := got[id][k], want[k]
			gj, _ := g.MarshalJSON()
			wj, _ := w.MarshalJSON()
			if string(gj) != string(wj) {
				t.Errorf("session %s event %d = %s, want %s", id, w.Seq, gj, wj)
			}
		}
	}
	if got, err := st.EventsAfterEach(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("EventsAfterEach of no session = %v, %v; want nothing", got, err)
	}
}
