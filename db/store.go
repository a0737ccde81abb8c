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
	marked, err := st.markUnstarted(ctx)
	if err != nil {
		return nil, err
	}
	repaired, err := st.repairRunning(ctx)
	return append(marked, repaired...), err
}

// markUnstarted marks live sessions without a single event interrupted.
func (st *Store) markUnstarted(ctx context.Context) ([]string, error) {
	ids, err := st.sessionIDs(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'idle' AND last_seq = -1")
	if err != nil {
		return nil, err
	}
	var marked []string
	for _, id := range ids {
		done := false
		err := st.write(ctx, func(t *wtx) error {
			s, err := t.state(id)
			if err != nil || !s.exists || s.status != StatusIdle || s.lastSeq != -1 {
				return err
			}
			s.status, s.dirty, done = StatusInterrupted, true, true
			return nil
		})
		if err != nil {
			return marked, err
		}
		if done {
			marked = append(marked, id)
			st.log.Info("marked a session whose first turn was never logged interrupted", "session_id", id)
		}
	}
	return marked, nil
}

func (st *Store) sessionIDs(ctx context.Context, query string) ([]string, error) {
	rows, err := st.rdb.QueryContext(ctx, query)
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

// repairRunning closes the open turn of every running live session.
func (st *Store) repairRunning(ctx context.Context) ([]string, error) {
	ids, err := st.sessionIDs(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running'")
	if err != nil {
		return nil, err
	}
	var repaired []string
	for _, id := range ids {
		done := false
		err := st.write(ctx, func(t *wtx) error {
			s, err := t.state(id)
			if err != nil || !s.exists || s.status != StatusRunning {
				return err
			}
			events, err := t.loadEvents(id)
			if err != nil {
				return err
			}
			closers, err := prepareEvents(id, s.lastSeq+1, closersFor(events))
			if err != nil || len(closers) == 0 {
				return err
			}
			done = true
			return t.insertEvents(id, s, closers)
		})
		if err != nil {
			return repaired, err
		}
		if done {
			repaired = append(repaired, id)
			st.log.Info("repaired an interrupted turn", "session_id", id)
		}
	}
	return repaired, nil
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
