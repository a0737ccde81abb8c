package pgstore

import (
	"context"
	"errors"
	"testing"

	"prism/core"
)

// TestCreateSession_concurrentCreatesKeepTheLock: two creates of one id
// run at once on one node; the first takes the node's lock on the id and
// then loses to the second, which creates the session. The failed create
// must not give the lock back under the session the second one runs: the
// node still holds it, and another node's claim of the id is refused.
func TestCreateSession_concurrentCreatesKeepTheLock(t *testing.T) {
	ctx := context.Background()
	a, url := newTestStore(t, Options{})
	b := openAt(t, url, Options{})
	const id = "twice"
	h := core.SessionHeader{ID: id, CreatedAt: 1767225600000, Cwd: "/work"}

	claimedFirst, secondDone := make(chan struct{}), make(chan struct{})
	first := true
	a.own.claimed = func(string) {
		if !first {
			return // the second create: straight on
		}
		first = false
		close(claimedFirst)
		<-secondDone // the first create writes only after the second committed
	}
	firstErr := make(chan error, 1)
	go func() { firstErr <- a.CreateSession(ctx, h) }()
	<-claimedFirst
	if err := a.CreateSession(ctx, h); err != nil {
		t.Fatalf("the second create: %v", err)
	}
	close(secondDone)
	if err := <-firstErr; core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("the first create = %v, want CONFLICT (the second created the id)", err)
	}

	if !a.own.holds(id) {
		t.Error("the node no longer holds the lock of the session its second create runs")
	}
	settle, err := b.own.claim(ctx, id)
	if err == nil {
		settle(false)
		t.Fatal("another node claimed the id of a session this node runs")
	}
	if !errors.Is(err, errClaimedElsewhere) {
		t.Fatalf("another node's claim = %v, want refused: the id is claimed elsewhere", err)
	}
	// The session runs here: a third, refused create keeps the lock too.
	if err := a.CreateSession(ctx, h); core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("a third create = %v, want CONFLICT", err)
	}
	if !a.own.holds(id) {
		t.Error("a refused create of a running session gave its lock back")
	}
}

// TestCreateSession_failedCreateGivesBack: a create that took the lock and
// failed alone (the id was stored already, by a node that has let it go)
// gives the lock back: another node may claim the id again.
func TestCreateSession_failedCreateGivesBack(t *testing.T) {
	ctx := context.Background()
	a, url := newTestStore(t, Options{})
	b := openAt(t, url, Options{})
	h := core.SessionHeader{ID: "stored", CreatedAt: 1767225600000, Cwd: "/work"}
	if err := b.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	b.own.release(h.ID)
	if err := a.CreateSession(ctx, h); core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("a create of a stored id = %v, want CONFLICT", err)
	}
	if a.own.holds(h.ID) {
		t.Error("a failed create kept the id's lock")
	}
	settle, err := b.own.claim(ctx, h.ID)
	if err != nil {
		t.Fatalf("another node's claim after the failed create: %v", err)
	}
	settle(false)
}
