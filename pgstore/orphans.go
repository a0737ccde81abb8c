package pgstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/logkey"
)

// DefaultRepairInterval is how often a serving node looks for orphaned
// sessions unless told otherwise (prism serve --repair-interval).
const DefaultRepairInterval = 2 * time.Second

// nodeLostReason is what the repair of a session whose node is gone says.
const nodeLostReason = "the node running it stopped or lost its database connection"

// orphans repairs, while the node runs, the sessions that look running
// but that no node runs any more — what startup repair does for the
// sessions of a node that stopped, without waiting for a node to start.
//
// How an orphan is found: the node running a session holds the session's
// advisory lock on its lock connection (owner), and PostgreSQL ends a
// session-level advisory lock with the connection that holds it. So when
// that node is killed, or loses its connection (a database restart, a
// network cut, a terminated backend), the lock becomes free. Every node
// checks on a timer (Options.RepairInterval) and whenever its LISTEN
// connection comes back after a loss: it lists the live sessions whose
// status is running (or that never logged an event), reads which session
// locks are held (pg_locks), and notes the time it first saw each one's
// lock free. A session whose lock stayed free for two intervals (the
// second timer pass after the first sighting: with the default 2 s, within
// about 6 s of the node's death) is repaired in a transaction that takes the session's lock
// (pg_try_advisory_xact_lock: skipped if anyone holds it), locks its row
// and re-checks that it is still running, then appends
// core.InterruptedTurnClosers (and a "repair" note, reason core.InterruptNodeLost) through
// the ordinary commit path — NOTIFY included, so every node's open pages
// fold the closers and the list shows the session interrupted — and
// releases the lock with the commit. Two nodes sweeping together repair a
// session once.
//
// Why a slow but alive owner is never repaired: it still holds its lock,
// however slow its turn. An owner whose lock connection died (with the
// database restarting, say) checks that connection on every pass of its
// own sweep (owner.keep) and takes its locks again at once, well within
// the two intervals other nodes wait.
//
// The owner's own failures: when an append of a session this node runs
// fails because the database was unreachable (or refused it), the
// session's core.Session refuses further appends and nothing will close
// its turn here. The node then gives the session's lock back
// (owner.appendFailed) and its sweep repairs the session as soon as the
// database answers, without the wait, with the reason "the store was
// unreachable" (core.InterruptStoreUnreachable), which the session's page
// shows.
type orphans struct {
	st       *Store
	interval time.Duration
	wake     chan struct{}

	// freeSince is when this node first saw each session's lock free
	// (owned by the sweep goroutine).
	freeSince map[string]time.Time
	down      bool // the last pass could not reach the database

	passes atomic.Int64 // completed passes (tests)
}

func newOrphans(st *Store, interval time.Duration) *orphans {
	return &orphans{st: st, interval: interval, wake: make(chan struct{}, 1), freeSince: map[string]time.Time{}}
}

// poke asks for a pass now (a LISTEN reconnection, a failed append).
func (o *orphans) poke() {
	if o == nil {
		return
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run sweeps until bg ends.
func (o *orphans) run(bg context.Context) {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		select {
		case <-bg.Done():
			return
		case <-t.C:
		case <-o.wake:
		}
		o.pass(bg)
	}
}

// passTimeout bounds one pass: a database that hangs rather than refuses
// does not stop the sweep for good.
const passTimeout = 30 * time.Second

// pass is one sweep: keep this node's locks, repair this node's failed
// sessions, then the sessions whose lock stayed free for two intervals.
func (o *orphans) pass(bg context.Context) {
	defer o.passes.Add(1)
	ctx, cancel := context.WithTimeout(bg, passTimeout)
	defer cancel()
	err := o.sweep(ctx)
	switch {
	case err != nil && bg.Err() == nil && !o.down:
		o.down = true
		o.st.log.Warn("cannot look for sessions whose node is gone; trying again", logkey.Err, err)
	case err == nil && o.down:
		o.down = false
		o.st.log.Info("looking for sessions whose node is gone again")
	}
}

func (o *orphans) sweep(ctx context.Context) error {
	if err := o.st.own.keep(ctx); err != nil {
		return err
	}
	for id, why := range o.st.own.failures() {
		if _, err := o.st.repairOne(ctx, id, "repaired a session whose events could not be stored", closeTurn(why, o.st.now().UnixMilli())); err != nil {
			return err
		}
		o.st.own.repaired(id)
	}
	rows, err := o.st.pool.Query(ctx, "SELECT id FROM sessions WHERE source = 'live' AND (status = 'running' OR last_seq = -1)")
	if err != nil {
		return translate(err, "list running sessions")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate(err, "list running sessions")
	}
	held, err := o.st.heldLocks(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
		if held[sessionLockKey(id)] || o.st.own.holds(id) {
			delete(o.freeSince, id)
			continue
		}
		since, ok := o.freeSince[id]
		if !ok {
			o.freeSince[id] = now
			continue
		}
		// Two intervals, less a quarter for the ticker's jitter: the
		// second timer pass after the first sighting repairs.
		if now.Sub(since) < 2*o.interval-o.interval/4 {
			continue
		}
		if _, err := o.st.repairOne(ctx, id, "repaired a session whose node is gone", repairOrphan(o.st.now().UnixMilli())); err != nil {
			return err
		}
		delete(o.freeSince, id)
	}
	for id := range o.freeSince {
		if !seen[id] {
			delete(o.freeSince, id)
		}
	}
	return nil
}

// heldLocks returns the keys of the session-level advisory locks held in
// this database now.
func (st *Store) heldLocks(ctx context.Context) (map[int64]bool, error) {
	rows, err := st.pool.Query(ctx, `SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, translate(err, "read the session locks")
	}
	defer rows.Close()
	held := map[int64]bool{}
	for rows.Next() {
		var hi, lo int64
		if err := rows.Scan(&hi, &lo); err != nil {
			return nil, translate(err, "read the session locks")
		}
		held[int64(uint64(hi)<<32|uint64(lo))] = true
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "read the session locks")
	}
	return held, nil
}

// repairOrphan is the repair of a session whose node is gone: removed if
// it never logged an event (as startup repair does), else its open turn
// closed with a "repair" note saying the node is gone (made at now).
func repairOrphan(now int64) repairFix {
	return func(ctx context.Context, t *wtx, id string, s *sessState) (bool, error) {
		if s.sum.Events == 0 {
			return removeUnstarted(ctx, t, id, s)
		}
		return closeTurn(&core.CancelCause{Kind: core.InterruptNodeLost, Reason: nodeLostReason}, now)(ctx, t, id, s)
	}
}

// Holds reports whether this node runs session id: it created the session
// and holds its lock, and no append to it has failed.
func (st *Store) Holds(id string) bool { return st.own.holds(id) }
