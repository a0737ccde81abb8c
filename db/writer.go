package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"prism/core"
	"prism/store"
)

type reqKind int

const (
	kindAppend reqKind = iota
	kindCreate
	kindTx
	kindIndex // file the search index's lag (searchlag.go)
)

type request struct {
	kind      reqKind
	sessionID string
	events    []core.Event
	checked   bool               // AppendChecked: data checked and compact
	facts     []*core.EventFacts // AppendChecked: the events' facts, nil where unknown
	header    core.SessionHeader
	source    string
	fn        func(*wtx) error
	// relaxed, on a kindTx request, commits it at synchronous=NORMAL
	// (beginRelaxed; an import with store.ImportOptions.Relaxed).
	relaxed bool
	// yield, on a kindIndex request, lets its index transaction stop early
	// (searchlag.go, fileLagAndForget; tests use it).
	yield func() bool
	store.Handoff
}

// writer is the single goroutine that owns the write connection — and,
// while it waits for requests, a lone appender that finds nothing queued
// (Store.submit): mu is held by whichever of them uses the writer's state.
type writer struct {
	mu sync.Mutex
	// wake nudges the writer goroutine when an appender's own commit left
	// the search index a lag to file once idle (receive).
	wake chan struct{}
	// lastActive is when the writer last served a request (its idle clock).
	lastActive time.Time

	st *Store
	// conn is the write connection, the writer's for the store's life
	// (connTx); statements through Store.wdb take w.mu to use it.
	conn     *sql.Conn
	reqs     <-chan *request // the Store's queue
	done     chan struct{}
	maxBatch int

	selState, insSession *sql.Stmt
	// raw are a durable step's own statements, the driver's (rawstmt.go).
	raw *rawStmts
	idx *indexStmts // the search index's (search.go)
	// noIndex appends without the search index: only benchmarks set it,
	// to measure what the index costs in the same run.
	noIndex bool
	lag     searchLag // committed events the index does not hold yet
	// relaxed: an index transaction set synchronous=NORMAL and it is not
	// back to FULL yet (searchlag.go, restoreSync).
	relaxed bool

	// args is insertEvents' buffer of statement arguments, reused; types
	// the event types it boxed (typeArg).
	args  []any
	types map[string]any

	cache       map[string]*sessState // committed session state
	dataVersion int64

	// commits counts committed transactions; isolateAlways skips the fast
	// path (tests use both).
	commits       atomic.Int64
	isolateAlways bool
	// indexRequests counts the searches (and others) that handed off to
	// the writer to file the index's lag (catchUpIndex; tests read it).
	indexRequests atomic.Int64

	lastCallers int // requests in the last group commit
}

// batchWait bounds how long the writer waits for the callers of its last
// group commit to come back before committing what it has.
var batchWait = 100 * time.Microsecond

// errRetryIsolated aborts a fast-path batch so it is re-run with one
// savepoint per request.
var errRetryIsolated = errors.New("retry the batch with one savepoint per request")

func newWriter(st *Store) (_ *writer, err error) {
	w := &writer{st: st, reqs: st.queue.Requests(), done: make(chan struct{}), wake: make(chan struct{}, 1), maxBatch: st.opts.MaxBatchEvents, cache: map[string]*sessState{}, dataVersion: -1,
		lag: searchLag{idle: indexLagIdle}}
	conn, err := st.wdb.db.Conn(context.Background())
	if err != nil {
		return nil, fmt.Errorf("take the write connection: %w", err)
	}
	w.conn = conn
	defer func() {
		if err != nil {
			w.closeStmts()
		}
	}()
	prep := func(q string) (*sql.Stmt, error) {
		s, err := conn.PrepareContext(context.Background(), q)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		return s, nil
	}
	if w.raw, err = prepareRaw(conn); err != nil {
		return nil, err
	}
	if w.selState, err = prep(selStateSQL); err != nil {
		return nil, err
	}
	if w.insSession, err = prep(insSessionSQL); err != nil {
		return nil, err
	}
	if w.idx, err = prepareIndex(prep); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *writer) closeStmts() {
	stmts := []*sql.Stmt{w.selState, w.insSession}
	if w.idx != nil {
		stmts = append(stmts, w.idx.all()...)
	}
	for _, s := range stmts {
		if s != nil {
			s.Close()
		}
	}
	if w.conn != nil {
		if w.raw != nil {
			w.raw.close()
		}
		w.conn.Close()
	}
}

// eventCols is the number of columns insertEventsSQL writes per event.
const eventCols = 9

// insertEventsSQL is the INSERT of n events.
func insertEventsSQL(n int) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO events (session_id, seq, type, time, data, ignorable, surface_op, source_event_seqs, call_id) VALUES `)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	return q.String()
}

// submit hands r to the writer goroutine and waits for its outcome
// (store.Queue.Submit) — or, for an append when the writer is idle,
// nothing is queued and the last group commit had a lone caller, commits
// it on the caller's goroutine (appendInline): the same transaction and
// commit, without the two goroutine hand-offs that would otherwise sit on
// every durable step's critical path.
func (st *Store) submit(ctx context.Context, r *request) error {
	if r.kind == kindAppend && st.w != nil && st.w.mu.TryLock() {
		ran, err := st.w.appendInline(ctx, r)
		st.w.mu.Unlock()
		if ran {
			return err
		}
	}
	return st.queue.Submit(ctx, r)
}

// appendInline commits the append r on the caller's goroutine; w.mu is
// held. ran is false when r must go through the queue after all: others
// wait there (their group commit goes first), or the store is closing.
func (w *writer) appendInline(ctx context.Context, r *request) (ran bool, err error) {
	if w.st.queue.Len() > 0 || w.lastCallers > 1 || w.st.queue.Closed() {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	if w.lag.full() {
		w.indexLagLogged("file the search index's lag")
	}
	lagged := w.lag.events > 0
	w.lastCallers = 1
	results, commits := w.runBatch([]*request{r})
	w.notify(commits) // still under w.mu: in commit order
	w.lastActive = time.Now()
	err = results[0]
	if !lagged && w.lag.events > 0 {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return true, err
}

func (w *writer) run() {
	defer close(w.done)
	var pending *request // a kindTx request met while draining a batch
	for {
		var first *request
		if pending != nil {
			first, pending = pending, nil
		} else {
			r, ok := w.receive()
			if !ok {
				w.closeIndex()
				return
			}
			if !r.Take() {
				continue
			}
			first = r
		}
		w.mu.Lock()
		pending = w.serve(first)
		w.lastActive = time.Now()
		w.mu.Unlock()
	}
}

// serve runs the request first — with the appends queued behind it, as
// one group commit — and returns a request met while draining that must
// run next on its own. w.mu is held.
func (w *writer) serve(first *request) (pending *request) {
	switch first.kind {
	case kindIndex:
		first.Done(w.fileLagAndForget(first.yield))
		return nil
	case kindTx:
		w.indexLagLogged("file the search index's lag before a write")
		first.Done(w.runTx(first))
		return nil
	}
	batch := []*request{first}
	n := len(first.events)
	// Adaptive group commit: the callers of the last batch are likely
	// to be back within microseconds of their acks, so wait briefly
	// (at most batchWait) until as many requests are queued; a lone
	// appender (last batch of one) never waits.
	target := min(w.lastCallers, w.maxBatch)
	if batchWait <= 0 {
		target = 0
	}
	var timer *time.Timer
drain:
	for n < w.maxBatch {
		var r *request
		var ok bool
		select {
		case r, ok = <-w.reqs:
		default:
			if len(batch) >= target {
				break drain
			}
			if timer == nil {
				timer = time.NewTimer(batchWait)
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
		if !r.Take() {
			continue
		}
		if r.kind == kindTx || r.kind == kindIndex {
			pending = r
			break drain
		}
		batch = append(batch, r)
		n += len(r.events)
	}
	if timer != nil {
		timer.Stop()
	}
	w.lastCallers = len(batch)
	results, commits := w.runBatch(batch)
	for i, err := range results {
		batch[i].Done(err)
	}
	w.notify(commits)
	return pending
}

// begin starts a write transaction and drops the state cache if another
// connection (another process) committed since our last transaction.
func (w *writer) begin() (*connTx, error) {
	if err := w.restoreSync(); err != nil {
		return nil, err
	}
	return w.beginAsSet()
}

// beginAsSet is begin at the connection's synchronous setting as it is
// (an index transaction's relaxed one).
func (w *writer) beginAsSet() (*connTx, error) {
	tx, err := beginConnTx(w.conn, w.raw)
	if err != nil {
		return nil, translate(err, "begin write transaction")
	}
	v, err := w.dataVersionNow()
	if err != nil {
		tx.Rollback() //nolint:errcheck
		return nil, translate(err, "read data_version")
	}
	if v != w.dataVersion {
		clear(w.cache)
		w.dataVersion = v
		w.lag.sweep = true // the search index's lag may miss what it wrote
	}
	if len(w.cache) > 10000 {
		clear(w.cache)
	}
	return tx, nil
}

// runBatch commits batch as one group commit and returns each request's
// outcome, and what the commit changed for Options.Committed (nil when
// nothing was committed).
func (w *writer) runBatch(batch []*request) ([]error, []store.Commit) {
	results, commits, err := w.tryBatch(batch, w.isolateAlways)
	if errors.Is(err, errRetryIsolated) {
		results, commits, err = w.tryBatch(batch, true)
	}
	for i := range batch {
		if err != nil && results[i] == nil {
			results[i] = err
		}
	}
	if err != nil {
		commits = nil
	}
	return results, commits
}

// tryBatch runs every request of batch in one transaction. A request that
// fails validation gets its own error and writes nothing; the others
// proceed. On the fast path a statement failure aborts the batch with
// errRetryIsolated; isolated, each request runs inside its own savepoint
// so a failing statement costs only its own request.
func (w *writer) tryBatch(batch []*request, isolated bool) ([]error, []store.Commit, error) {
	results := make([]error, len(batch))
	tx, err := w.begin()
	if err != nil {
		return results, nil, err
	}
	t := newWtx(w, tx)
	for i, r := range batch {
		if !isolated {
			rejected, dbErr := t.apply(r)
			if dbErr != nil {
				tx.Rollback() //nolint:errcheck
				return results, nil, errRetryIsolated
			}
			results[i] = rejected
			continue
		}
		if _, err := tx.Exec("SAVEPOINT request"); err != nil {
			tx.Rollback() //nolint:errcheck
			return results, nil, translate(err, "savepoint")
		}
		sub := t.child()
		rejected, dbErr := sub.apply(r)
		if rejected == nil && dbErr == nil {
			sub.mergeInto(t)
			_, err = tx.Exec("RELEASE request")
		} else {
			results[i] = rejected
			if dbErr != nil {
				results[i] = dbErr
			}
			if _, err = tx.Exec("ROLLBACK TO request"); err == nil {
				_, err = tx.Exec("RELEASE request")
			}
		}
		if err != nil {
			tx.Rollback() //nolint:errcheck
			return results, nil, translate(err, "savepoint")
		}
	}
	if err := t.finish(); err != nil {
		tx.Rollback() //nolint:errcheck
		if !isolated {
			return results, nil, errRetryIsolated
		}
		return results, nil, err
	}
	if err := tx.Commit(); err != nil {
		return results, nil, translate(err, "commit")
	}
	w.commits.Add(1)
	commits := t.commits()
	t.publish()
	return results, commits, nil
}

// runTx runs a kindTx request alone in its own transaction.
func (w *writer) runTx(r *request) error {
	begin := w.begin
	if r.relaxed {
		begin = w.beginRelaxed
	}
	tx, err := begin()
	if err != nil {
		return err
	}
	t := newWtx(w, tx)
	if err := r.fn(t); err != nil {
		tx.Rollback() //nolint:errcheck
		return err
	}
	if err := t.finish(); err != nil {
		tx.Rollback() //nolint:errcheck
		return err
	}
	if err := tx.Commit(); err != nil {
		return translate(err, "commit")
	}
	w.commits.Add(1)
	commits := t.commits()
	t.publish()
	w.notify(commits)
	return nil
}

func (w *writer) notify(commits []store.Commit) {
	if w.st.opts.Committed == nil {
		return
	}
	for _, c := range commits {
		w.st.opts.Committed(c)
	}
}

// dataVersionNow reads PRAGMA data_version on the write connection: it
// moves when another connection (another process) commits; every write
// transaction's begin reads it.
func (w *writer) dataVersionNow() (int64, error) {
	return w.raw.queryInt(w.raw.dataVersion)
}
