package pgstore

import (
	"context"
	"fmt"

	"prism/core"
)

// CreateSession records a new, empty session whose events prism appends
// (source "live") and claims it for this node: the node holds the
// session's advisory lock until it closes, so that no other node's
// startup repair touches it while it runs. It fails with core.CodeConflict
// when the id exists.
func (st *Store) CreateSession(ctx context.Context, h core.SessionHeader) error {
	settle, err := st.own.claim(ctx, h.ID)
	if err != nil {
		return err
	}
	// A refused create gives the lock back only when it took it and no
	// create of the id beside it succeeded (owner.settle): a session this
	// node runs keeps its lock. Deferred, so a panic below settles too.
	created := false
	defer func() { settle(created) }()
	if st.own.claimed != nil {
		st.own.claimed(h.ID)
	}
	err = st.submit(ctx, &request{create: true, sessionID: h.ID, header: h})
	created = err == nil
	return err
}

// AppendEvents durably appends events to a session. Their seqs must
// continue the stored log contiguously (else core.CodeConflict, also when
// another node appended first), their data must be lossless JSON and
// surfaceOp/sourceEventSeqs may appear only on surface types (else
// core.CodeInvalid); a missing session is core.CodeNotFound. It returns
// only after the commit that holds the events (concurrent appends share
// one commit); on error nothing of the batch is stored.
func (st *Store) AppendEvents(ctx context.Context, sessionID string, events []core.Event) error {
	if len(events) == 0 {
		return nil
	}
	err := st.submit(ctx, &request{sessionID: sessionID, events: events})
	if err != nil {
		st.own.appendFailed(sessionID, err)
	}
	return err
}

var _ core.CheckedStore = (*Store)(nil)

// AppendChecked implements core.CheckedStore: AppendEvents for events a
// core.Session appended, whose data it checked and compacted, and whose
// facts it knows where facts[i] is not nil — the store then neither checks
// the data again nor decodes it for the session's summary and call ids.
// The envelope (seqs, types, surface fields) is checked as always.
func (st *Store) AppendChecked(ctx context.Context, sessionID string, events []core.Event, facts []*core.EventFacts) error {
	if len(events) == 0 {
		return nil
	}
	if facts != nil && len(facts) != len(events) {
		return core.Errorf(core.CodeInvalid, "append to session %s: %d facts for %d events", sessionID, len(facts), len(events))
	}
	err := st.submit(ctx, &request{sessionID: sessionID, events: events, checked: true, facts: facts})
	if err != nil {
		st.own.appendFailed(sessionID, err)
	}
	return err
}

// IfEmpty runs fn if the database holds no session, while holding a lock
// that makes every other node's IfEmpty wait: of several nodes starting on
// an empty database, one runs fn (fn must have created its session when it
// returns) and the others see it. It reports whether fn ran.
func (st *Store) IfEmpty(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	c, err := st.pool.Acquire(ctx)
	if err != nil {
		return false, translate(err, "first start")
	}
	defer c.Release()
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", startLock); err != nil {
		return false, translate(err, "first start: lock")
	}
	defer c.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", startLock) //nolint:errcheck
	var empty bool
	if err := c.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM sessions)").Scan(&empty); err != nil {
		return false, translate(err, "first start")
	}
	if !empty {
		return false, nil
	}
	if err := fn(ctx); err != nil {
		return true, fmt.Errorf("first start: %w", err)
	}
	return true, nil
}

// writeCreating is write for fn that may create sessions and may run
// again (an import, SyncLog): when a session's insert lost to another
// transaction that committed the same id first (takenSession), fn runs
// once more in a new transaction, which finds the row and does what it
// does with a stored session (left, extended, or refused as a conflict).
func (st *Store) writeCreating(ctx context.Context, fn func(*wtx) error) error {
	err := st.write(ctx, fn)
	if _, taken := takenSession(err); taken {
		err = st.write(ctx, fn)
	}
	return err
}

// write runs fn in a transaction of its own on a pooled connection: fn
// locks and changes sessions through t, which writes them and NOTIFYs the
// other nodes before the commit; after it, the changes go to the fan-out.
func (st *Store) write(ctx context.Context, fn func(*wtx) error) error {
	if st.queue.Closed() {
		return ErrClosed
	}
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		return translate(err, "begin transaction")
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // a no-op after Commit
	t := newWtx(tx)
	if err := fn(t); err != nil {
		return err
	}
	if err := t.flush(ctx); err != nil {
		return err
	}
	for _, f := range t.late {
		if err := f(ctx); err != nil {
			return err
		}
	}
	changes := t.changes()
	st.fan.claim(changes)
	if err := tx.Commit(ctx); err != nil {
		st.fan.unclaim(changes)
		return translate(err, "commit")
	}
	st.settleMarks(changes, t.watchMark)
	st.fan.local(changes)
	return nil
}
