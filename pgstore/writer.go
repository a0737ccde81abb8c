package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/logkey"
	"prism/store"
)

// A request is one create or append waiting for the writer.
type request struct {
	create    bool
	sessionID string
	header    core.SessionHeader
	events    []core.Event
	// checked and facts: an AppendChecked (see wtx.appendChecked).
	checked bool
	facts   []*core.EventFacts
	store.Handoff
}

// writer is the goroutine that commits this node's creates and appends,
// batching concurrent ones into one transaction (group commit).
type writer struct {
	st       *Store
	conn     *pgx.Conn
	reqs     <-chan *request // the Store's queue
	done     chan struct{}
	maxBatch int

	lastCallers int           // requests in the last batch
	commits     atomic.Int64  // committed transactions (tests, benchmarks)
	wait        time.Duration // how long to wait for the last batch's callers
}

func newWriter(ctx context.Context, st *Store) (*writer, error) {
	conn, err := st.conn(ctx, "writer")
	if err != nil {
		return nil, fmt.Errorf("writer connection: %w", err)
	}
	return &writer{st: st, conn: conn, reqs: st.queue.Requests(), done: make(chan struct{}),
		maxBatch: st.opts.MaxBatchEvents, wait: 100 * time.Microsecond}, nil
}

func (w *writer) close() {
	if w.conn != nil {
		w.conn.Close(context.Background()) //nolint:errcheck
	}
}

// submit hands r to the writer goroutine and waits for its outcome
// (store.Queue.Submit).
func (st *Store) submit(ctx context.Context, r *request) error {
	return st.queue.Submit(ctx, r)
}

func (w *writer) run() {
	defer close(w.done)
	for {
		r, ok := <-w.reqs
		if !ok {
			return
		}
		if !r.Take() {
			continue
		}
		batch := []*request{r}
		n := len(r.events)
		// Adaptive group commit: the callers of the last batch are likely
		// back within microseconds of their acks, so wait briefly for as
		// many; a lone appender never waits.
		target := min(w.lastCallers, w.maxBatch)
		var timer *time.Timer
	drain:
		for n < w.maxBatch {
			var r *request
			select {
			case r, ok = <-w.reqs:
			default:
				if len(batch) >= target {
					break drain
				}
				if timer == nil {
					timer = time.NewTimer(w.wait)
				}
				select {
				case r, ok = <-w.reqs:
				case <-timer.C:
					break drain
				}
			}
			if !ok {
				break drain
			}
			if r.Take() {
				batch = append(batch, r)
				n += len(r.events)
			}
		}
		if timer != nil {
			timer.Stop()
		}
		w.lastCallers = len(batch)
		w.runBatch(batch)
	}
}

// runBatch commits a batch; when the database refuses the batch as a
// whole, each request is retried in a transaction of its own, so one
// request's failure is its own.
func (w *writer) runBatch(batch []*request) {
	results, err := w.tryBatch(batch)
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			res, err := w.tryBatch([]*request{r})
			if err == nil {
				err = res[0]
			}
			r.Done(err)
		}
		return
	}
	for i, r := range batch {
		if err != nil {
			r.Done(err)
		} else {
			r.Done(results[i])
		}
	}
}

// tryBatch runs batch in one transaction: requests that fail validation get
// their own error and write nothing; err is a failure of the whole.
func (w *writer) tryBatch(batch []*request) (results []error, err error) {
	ctx := context.Background()
	if w.conn.IsClosed() {
		conn, err := w.st.conn(ctx, "writer")
		if err != nil {
			return nil, translate(err, "reconnect the writer")
		}
		w.conn = conn
	}
	tx, err := w.conn.Begin(ctx)
	if err != nil && isConnErr(err) {
		// The connection died while idle (the database restarted since
		// the last commit): nothing was written, so a fresh connection
		// may begin again — an outage that is over fails no append.
		w.conn.Close(ctx) //nolint:errcheck // dead already
		conn, cerr := w.st.conn(ctx, "writer")
		if cerr != nil {
			return nil, translate(cerr, "reconnect the writer")
		}
		w.conn = conn
		tx, err = w.conn.Begin(ctx)
	}
	if err != nil {
		return nil, translate(err, "begin write transaction")
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t := newWtx(tx)
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.sessionID
	}
	if err := t.lock(ctx, ids); err != nil {
		return nil, err
	}
	results = make([]error, len(batch))
	for i, r := range batch {
		if r.create {
			results[i] = t.insertSession(r.header, store.SourceLive)
		} else {
			results[i] = t.appendChecked(r.sessionID, r.events, r.checked, r.facts)
		}
	}
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	changes := t.changes()
	w.st.fan.claim(changes)
	if err := tx.Commit(ctx); err != nil {
		w.st.fan.unclaim(changes)
		// The commit's fate is unknown when the connection broke during it.
		if w.conn.IsClosed() {
			w.st.log.Error("the connection broke while committing: the outcome of this commit is unknown", logkey.Err, err)
		}
		return nil, translate(err, "commit")
	}
	w.commits.Add(1)
	w.st.settleMarks(changes, nil)
	w.st.fan.local(changes)
	return results, nil
}
