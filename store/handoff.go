package store

import (
	"context"
	"sync"
	"sync/atomic"

	"prism/core"
)

// ErrClosed is what a write to a closed store fails with (both engines').
var ErrClosed = core.Errorf(core.CodeUnavailable, "session store is closed")

// Handoff is one write request's hand-off between the caller that submits
// it (Queue.Submit) and the store's writer goroutine, which takes it (Take)
// and reports its outcome (Done). An engine's request type embeds it.
type Handoff struct {
	done  chan error
	state atomic.Int32
}

// Request states: a caller that gives up (its context ended) may withdraw
// a request only while the writer has not taken it.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

func (h *Handoff) handoff() *Handoff { return h }

// Take is the writer's claim on the request: false when its caller
// withdrew it already (the writer then skips it).
func (h *Handoff) Take() bool { return h.state.CompareAndSwap(reqQueued, reqTaken) }

// Done reports the outcome of a taken request to its caller; the writer
// calls it once per taken request.
func (h *Handoff) Done(err error) { h.done <- err }

// Handed is a request that embeds a Handoff.
type Handed interface{ handoff() *Handoff }

// Queue is the requests a store's writer goroutine takes, guarded against
// Close: a Submit after Close fails with ErrClosed, and Close ends the
// writer's Requests once the queued ones are taken.
type Queue[R Handed] struct {
	mu     sync.RWMutex // guards closed and sends on reqs
	closed bool
	reqs   chan R
}

// NewQueue returns an open queue that buffers size requests.
func NewQueue[R Handed](size int) *Queue[R] {
	return &Queue[R]{reqs: make(chan R, size)}
}

// Requests is what the writer receives from; it is closed by Close.
func (q *Queue[R]) Requests() <-chan R { return q.reqs }

// Len is the number of requests queued and not received yet.
func (q *Queue[R]) Len() int { return len(q.reqs) }

// Submit queues r and waits for its outcome. If ctx ends before the writer
// takes r, r is withdrawn; once taken, Submit waits for the commit (or
// rollback) that decides it, so an error never hides a durable write.
func (q *Queue[R]) Submit(ctx context.Context, r R) error {
	return q.SubmitThen(ctx, r, nil)
}

// SubmitThen is Submit that calls queued, if not nil, once r is queued
// (not when it was refused first): a request queued after that is taken
// after r, the writer taking them in order.
func (q *Queue[R]) SubmitThen(ctx context.Context, r R, queued func()) error {
	h := r.handoff()
	h.done = make(chan error, 1)
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		return ErrClosed
	}
	select {
	case q.reqs <- r:
	case <-ctx.Done():
		q.mu.RUnlock()
		return ctx.Err()
	}
	q.mu.RUnlock()
	if queued != nil {
		queued()
	}
	select {
	case err := <-h.done:
		return err
	case <-ctx.Done():
		if h.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-h.done
	}
}

// Close refuses further Submits and closes Requests; it reports false
// when the queue was closed already.
func (q *Queue[R]) Close() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.closed = true
	close(q.reqs)
	return true
}

// Closed reports whether Close was called.
func (q *Queue[R]) Closed() bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.closed
}
