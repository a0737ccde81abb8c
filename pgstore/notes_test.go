package pgstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"prism/core/notes"
	"prism/store"
	"prism/store/storetest"
)

// TestNotesReachTheOtherNode: a note written on node A reaches node B's
// commit hook through the notes channel (its pages read the notes again),
// and B reads the note — any node may write one, no ownership needed.
func TestNotesReachTheOtherNode(t *testing.T) {
	ctx := context.Background()
	got := make(chan string, 64)
	a, url := newTestStore(t, Options{Name: "A"})
	b := openAt(t, url, Options{Name: "B", Committed: func(c store.Commit) {
		if c.Notes {
			got <- c.SessionID
		}
	}})
	storetest.MustCreate(t, b, "s")
	if err := b.AppendEvents(ctx, "s", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	n, err := a.PutNote(ctx, notes.Input{Session: "s", Kind: notes.KindLabel, CallID: "call_1", Data: json.RawMessage(`{"label":"wrong"}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != "s" {
			t.Fatalf("B was told of session %s's notes, want s", id)
		}
	case <-time.After(30 * time.Second): // a failure guard, not synchronization
		t.Fatal("B was not told of the note within 30 s")
	}
	ns, err := b.Notes(ctx, "s", notes.Query{})
	if err != nil || len(ns) != 1 || ns[0].ID != n.ID {
		t.Fatalf("B reads %+v (%v), want A's note", ns, err)
	}
}
