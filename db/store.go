package db

import (
	"context"
	"fmt"

	"prism/core"
	"prism/core/logkey"
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
// turn/end{interrupted}), which marks the session interrupted. Call it at
// startup, before any agent runs; it returns the ids it repaired. Imported
// and watched sessions are not touched (import repairs at import time; a
// watched session belongs to dsh, which repairs its own log).
func (st *Store) RepairOpenTurns(ctx context.Context) ([]string, error) {
	rows, err := st.rdb.QueryContext(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running'")
	if err != nil {
		return nil, translate(err, "list running sessions")
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, translate(err, "list running sessions")
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list running sessions")
	}
	var repaired []string
	for _, id := range ids {
		done := false
		err := st.write(ctx, func(t *wtx) error {
			s, err := t.state(id)
			if err != nil || !s.exists || s.sum.Status != StatusRunning {
				return err
			}
			events, err := t.loadEvents(id)
			if err != nil {
				return err
			}
			closers, err := prepareEvents(id, s.sum.LastSeq+1, closersFor(events))
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
			st.log.Info("repaired an interrupted turn", logkey.SessionID, id)
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

// resummarize recomputes the stored summaries written under older rules
// than core.SummaryVersion (a database of an earlier prism), so the list
// shows every session by today's rules. Open calls it.
func (st *Store) resummarize(ctx context.Context) error {
	rows, err := st.rdb.QueryContext(ctx, "SELECT id FROM sessions WHERE summary_version <> ?", core.SummaryVersion)
	if err != nil {
		return translate(err, "list sessions to resummarize")
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return translate(err, "list sessions to resummarize")
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(err, "list sessions to resummarize")
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
