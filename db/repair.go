package db

import (
	"context"
	"fmt"

	"prism/core"
	"prism/core/logkey"
	"prism/store"
)

// RepairOpenTurns applies crash repair to every session prism itself writes
// (source "live") whose status is running: it loads the log, appends
// core.InterruptedTurnClosers (synthetic tool results, step/end,
// turn/end{interrupted}), which marks the session interrupted. A live
// session that never got its first turn logged — created, then the process
// died before its prompt was committed, so it was never acknowledged and
// has no event at all — is removed: there is nothing of it to show, and a
// header alone would stand in the list as an idle session forever. Call it
// at startup, before any agent runs; it returns the ids it removed, then
// those it repaired. Imported and watched sessions are not touched (import
// repairs at import time; a watched session belongs to dsh, which repairs
// its own log).
func (st *Store) RepairOpenTurns(ctx context.Context) ([]string, error) {
	removed, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND last_seq = -1",
		"removed a session whose first turn was never logged", removeUnstarted)
	if err != nil {
		return removed, err
	}
	repaired, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running'",
		"repaired an interrupted turn", closeTurn)
	return append(removed, repaired...), err
}

// A repairFix changes one session in a repair transaction, and reports
// whether it did.
type repairFix func(t *wtx, id string, s *sessState) (bool, error)

// removeUnstarted removes a session that never logged an event (created,
// then the process died before its first event was committed: never
// acknowledged, nothing to show).
func removeUnstarted(t *wtx, id string, s *sessState) (bool, error) {
	if s.sum.Events != 0 {
		return false, nil
	}
	return true, t.deleteSession(id, s)
}

// closeTurn appends core.InterruptedTurnClosers to a session whose status
// is running.
func closeTurn(t *wtx, id string, s *sessState) (bool, error) {
	if s.sum.Status != StatusRunning {
		return false, nil
	}
	events, err := t.loadEvents(id)
	if err != nil {
		return false, err
	}
	closers, err := store.PrepareEvents(id, s.sum.LastSeq+1, store.Closers(events), false)
	if err != nil || len(closers) == 0 {
		return false, err
	}
	return true, t.insertEvents(id, s, closers, nil)
}

// sessionIDs returns the ids a query selects.
func (st *Store) sessionIDs(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := st.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err, "list sessions")
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err, "list sessions")
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list sessions")
	}
	return ids, nil
}

// repairEach runs fix, each in a write transaction of its own, on the
// sessions query selects that still exist, and returns the ids fix
// changed (logging what for each).
func (st *Store) repairEach(ctx context.Context, query, what string, fix repairFix) ([]string, error) {
	ids, err := st.sessionIDs(ctx, query)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, id := range ids {
		done := false
		err := st.write(ctx, func(t *wtx) error {
			s, err := t.state(id)
			if err != nil || !s.exists {
				return err
			}
			done, err = fix(t, id, s)
			return err
		})
		if err != nil {
			return changed, err
		}
		if done {
			changed = append(changed, id)
			st.log.Info(what, logkey.SessionID, id)
		}
	}
	return changed, nil
}

// resummarize recomputes the stored summaries written under older rules
// than core.SummaryVersion (a database of an earlier prism), so the list
// shows every session by today's rules. Open calls it.
func (st *Store) resummarize(ctx context.Context) error {
	ids, err := st.sessionIDs(ctx, "SELECT id FROM sessions WHERE summary_version <> ?", core.SummaryVersion)
	if err != nil {
		return fmt.Errorf("resummarize: %w", err)
	}
	for _, id := range ids {
		// Reading the state of a row with an older version folds its log
		// again; the transaction writes the row back.
		if err := st.write(ctx, func(t *wtx) error { _, err := t.state(id); return err }); err != nil {
			return fmt.Errorf("resummarize session %s: %w", id, err)
		}
	}
	if len(ids) > 0 {
		st.log.Info("recomputed session summaries under the current rules", logkey.Sessions, len(ids))
	}
	return nil
}
