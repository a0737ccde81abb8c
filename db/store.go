package db

import (
	"context"

	"prism/core"
)

// CreateSession records a new, empty session whose events prism appends
// (source "live"). It fails with core.CodeConflict when the id exists.
func (st *Store) CreateSession(ctx context.Context, h core.SessionHeader) error {
	return st.submit(ctx, &request{kind: kindCreate, header: h, source: SourceLive})
}

// AppendEvents durably appends events to a session. Their seqs must
// continue the stored log contiguously (else core.CodeConflict), their data
// must be lossless JSON and surfaceOp/sourceEventSeqs may appear only on
// surface types (else core.CodeInvalid); a missing session is
// core.CodeNotFound. It returns only after the commit that holds the events
// (concurrent appends share one commit); on error nothing of the batch is
// stored. If ctx ends while the append is still queued it is withdrawn;
// once the writer has taken it, AppendEvents waits for its commit.
func (st *Store) AppendEvents(ctx context.Context, sessionID string, events []core.Event) error {
	if len(events) == 0 {
		return nil
	}
	return st.submit(ctx, &request{kind: kindAppend, sessionID: sessionID, events: events})
}

// write runs fn in a write transaction of its own, on the writer goroutine.
func (st *Store) write(ctx context.Context, fn func(*wtx) error) error {
	return st.submit(ctx, &request{kind: kindTx, fn: fn})
}

// RepairOpenTurns applies crash repair to every session prism itself writes
// (source "live") whose status is running: it loads the log, appends
// core.InterruptedTurnClosers (synthetic tool results, step/end,
// turn/end{interrupted}), which marks the session interrupted. A live
// session that never got its first turn logged (created, then the process
// died before its prompt was committed: no events at all) is marked
// interrupted too; nothing is invented for its log. Call it at startup,
// before any agent runs; it returns the ids it repaired or marked. Imported
// and watched sessions are not touched (import repairs at import time; a
// watched session belongs to dsh, which repairs its own log).
func (st *Store) RepairOpenTurns(ctx context.Context) ([]string, error) {
	// Never started: no events at all. Nothing is invented for the log.
	marked, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'idle' AND last_seq = -1",
		"marked a session whose first turn was never logged interrupted",
		func(t *wtx, id string, s *sessState) (bool, error) {
			if s.status != StatusIdle || s.lastSeq != -1 {
				return false, nil
			}
			s.status, s.dirty = StatusInterrupted, true
			return true, nil
		})
	if err != nil {
		return marked, err
	}
	repaired, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running'",
		"repaired an interrupted turn",
		func(t *wtx, id string, s *sessState) (bool, error) {
			if s.status != StatusRunning {
				return false, nil
			}
			events, err := t.loadEvents(id)
			if err != nil {
				return false, err
			}
			closers, err := prepareEvents(id, s.lastSeq+1, closersFor(events))
			if err != nil || len(closers) == 0 {
				return false, err
			}
			return true, t.insertEvents(id, s, closers)
		})
	return append(marked, repaired...), err
}

// repairEach runs fix, each in a write transaction of its own, on the
// sessions query selects that still exist, and returns the ids fix
// changed (logging what for each).
func (st *Store) repairEach(ctx context.Context, query, what string, fix func(t *wtx, id string, s *sessState) (bool, error)) ([]string, error) {
	rows, err := st.rdb.QueryContext(ctx, query)
	if err != nil {
		return nil, translate(err, "list sessions to repair")
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, translate(err, "list sessions to repair")
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list sessions to repair")
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
			st.log.Info(what, "session_id", id)
		}
	}
	return changed, nil
}

// closersFor returns core.InterruptedTurnClosers for a loaded log, with
// seqs continuing it.
func closersFor(events []core.Event) []core.Event {
	closers := core.InterruptedTurnClosers(events)
	next := int64(len(events))
	for i := range closers {
		closers[i].Seq = next + int64(i)
	}
	return closers
}
