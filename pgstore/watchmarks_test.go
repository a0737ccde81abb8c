package pgstore

import (
	"context"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/store"
)

// TestWatchMarkGoesWithADeletionOnAnotherNode: a session this node
// watches (its mark kept) and another node deletes loses its mark here
// too once this node hears of the deletion (its Deleted commit), so the
// node's marks do not keep sessions deleted anywhere in the cluster.
func TestWatchMarkGoesWithADeletionOnAnotherNode(t *testing.T) {
	ctx := context.Background()
	commits := make(chan store.Commit, 64)
	a, url := newTestStore(t, Options{Committed: func(c store.Commit) { commits <- c }})
	b := openAt(t, url, Options{})
	const id = "watched-elsewhere"
	h := core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1000}
	bl := coretest.NewBuilder(1000)
	bl.TurnStart().StepStart().User("deploy").Assistant("checking", [3]string{"c1", "bash", `{"cmd":"ls"}`}).Call("c1", "bash", `{"cmd":"ls"}`).Result("c1", "main.go", false, nil, nil).StepEnd()
	if _, _, err := a.SyncWatched(ctx, h, bl.Events[:2]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.AppendWatched(ctx, h, store.WatchedWrite{Stored: 2, From: 2, Events: bl.Events[2:], Mark: len(bl.Events)}); err != nil {
		t.Fatal(err)
	}
	if n := a.marks.Len(); n != 1 {
		t.Fatalf("%d marks after a marked watched write, want 1", n)
	}
	if _, err := b.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	for c := range commits {
		if c.SessionID == id && c.Deleted {
			break
		}
	}
	if n := a.marks.Len(); n != 0 {
		t.Errorf("%d marks kept on this node after another node deleted the session, want 0", n)
	}
}
