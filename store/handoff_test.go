package store

import (
	"context"
	"errors"
	"testing"
)

// testReq is a request of a test's writer.
type testReq struct {
	Handoff
	n int
}

// TestSubmitThenCallsQueuedOnceQueued: SubmitThen calls queued after its
// request is queued and before its outcome, so a request submitted from
// queued is taken after it; a queue that refuses the request (closed)
// never calls it.
func TestSubmitThenCallsQueuedOnceQueued(t *testing.T) {
	ctx := context.Background()
	q := NewQueue[*testReq](4)
	taken := make(chan int, 2)
	go func() { // the writer: takes requests in order, reports success
		for r := range q.Requests() {
			if r.Take() {
				taken <- r.n
				r.Done(nil)
			}
		}
	}()
	second := make(chan error, 1)
	queued := 0
	if err := q.SubmitThen(ctx, &testReq{n: 1}, func() {
		queued++
		go func() { second <- q.Submit(ctx, &testReq{n: 2}) }()
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if queued != 1 {
		t.Fatalf("queued was called %d times, want 1", queued)
	}
	if a, b := <-taken, <-taken; a != 1 || b != 2 {
		t.Errorf("the writer took requests %d then %d, want 1 then 2", a, b)
	}
	q.Close()
	called := false
	if err := q.SubmitThen(ctx, &testReq{n: 3}, func() { called = true }); !errors.Is(err, ErrClosed) {
		t.Errorf("SubmitThen on a closed queue: %v, want ErrClosed", err)
	}
	if called {
		t.Error("SubmitThen called queued for a request a closed queue refused")
	}
}
