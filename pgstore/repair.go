package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
)

// RepairOpenTurns applies crash repair to the sessions prism itself
// writes (source "live") whose advisory lock is free — no node runs them.
// First it removes those that never logged an event (created, then killed
// before their first event was committed: never acknowledged, nothing to
// show). Then it appends core.InterruptedTurnClosers to those whose status
// is running, which marks them interrupted. A session another node runs is
// left alone; two nodes repairing at once repair each session once (each
// repair holds the session's lock for its transaction and re-checks the
// session under the row lock). It returns the ids it removed or repaired.
func (st *Store) RepairOpenTurns(ctx context.Context) ([]string, error) {
	removed, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND last_seq = -1 ORDER BY id",
		"removed a session whose first turn was never logged", removeUnstarted)
	if err != nil {
		return removed, err
	}
	repaired, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running' ORDER BY id",
		"repaired an interrupted turn", closeTurn(nil, 0))
	return append(removed, repaired...), err
}

// A repairFix changes one session in a repair transaction that holds its
// locks, and reports whether it did.
type repairFix func(ctx context.Context, t *wtx, id string, s *sessState) (bool, error)

// removeUnstarted removes a session that never logged an event (created,
// then its node died before its first event was committed: never
// acknowledged, nothing to show).
func removeUnstarted(ctx context.Context, t *wtx, id string, s *sessState) (bool, error) {
	if s.sum.Events != 0 {
		return false, nil
	}
	return true, t.deleteSession(ctx, id)
}

// closeTurn returns the fix that appends core.InterruptedTurnClosers to a
// session whose status is running and, when why is set, records why in
// the same transaction as a "repair" note on the closing turn/end (made
// at now, epoch milliseconds): the log stays plain dsh.
func closeTurn(why *core.CancelCause, now int64) repairFix {
	return func(ctx context.Context, t *wtx, id string, s *sessState) (bool, error) {
		if s.sum.Status != core.StatusRunning {
			return false, nil
		}
		events, err := t.loadEvents(ctx, id)
		if err != nil {
			return false, err
		}
		closers := core.InterruptedTurnClosers(events)
		for i := range closers {
			closers[i].Seq = int64(len(events) + i)
		}
		if len(closers) == 0 {
			return false, nil
		}
		if err := t.append(id, closers); err != nil {
			return false, err
		}
		if why == nil {
			return true, nil
		}
		end := closers[len(closers)-1].Seq
		if _, err := insertNote(ctx, t.tx, notes.Repair(id, end, *why), end, now); err != nil {
			return false, fmt.Errorf("record why repair closed the turn: %w", err)
		}
		return true, nil
	}
}

// repairEach runs fix on each session query selects (repairOne) and
// returns the ids fix changed.
func (st *Store) repairEach(ctx context.Context, query, what string, fix repairFix) ([]string, error) {
	rows, err := st.pool.Query(ctx, query)
	if err != nil {
		return nil, translate(err, "list sessions to repair")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate(err, "list sessions to repair")
	}
	var changed []string
	for _, id := range ids {
		done, err := st.repairOne(ctx, id, what, fix)
		if err != nil {
			return changed, err
		}
		if done {
			changed = append(changed, id)
		}
	}
	return changed, nil
}

// repairOne runs fix on session id in a transaction of its own that holds
// the session's advisory lock (skipping a session a node runs) and its row
// lock (skipping one that is gone), logging what when fix changed it. The
// transaction commits through the ordinary path: other nodes are notified
// and this node's fan-out delivers the change.
func (st *Store) repairOne(ctx context.Context, id, what string, fix repairFix) (bool, error) {
	done := false
	err := st.write(ctx, func(t *wtx) error {
		var free bool
		if err := t.tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", sessionLockKey(id)).Scan(&free); err != nil {
			return translate(err, "lock session "+id)
		}
		if !free {
			return nil // a node runs it
		}
		if err := t.lock(ctx, []string{id}); err != nil {
			return err
		}
		s := t.touched[id]
		if !s.exists {
			return nil
		}
		var err error
		done, err = fix(ctx, t, id, s)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("repair session %s: %w", id, err)
	}
	if done {
		st.log.Info(what, logkey.SessionID, id)
	}
	return done, nil
}

// resummarize recomputes the stored summaries written under older rules
// than core.SummaryVersion, so the list shows every session by today's
// rules. Open calls it.
func (st *Store) resummarize(ctx context.Context) error {
	rows, err := st.pool.Query(ctx, "SELECT id FROM sessions WHERE summary_version <> $1", core.SummaryVersion)
	if err != nil {
		return translate(err, "list sessions to resummarize")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate(err, "list sessions to resummarize")
	}
	for _, id := range ids {
		// Locking a row of an older version folds its log again; the
		// transaction writes it back.
		err := st.write(ctx, func(t *wtx) error { return t.lock(ctx, []string{id}) })
		if err != nil {
			return fmt.Errorf("resummarize session %s: %w", id, err)
		}
	}
	if len(ids) > 0 {
		st.log.Info("recomputed session summaries under the current rules", logkey.Sessions, len(ids))
	}
	return nil
}
