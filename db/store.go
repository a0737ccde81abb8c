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
	return st.submit(ctx, &request{kind: kindAppend, sessionID: sessionID, events: events, checked: true, facts: facts})
}

// write runs fn in a write transaction of its own, on the writer goroutine.
func (st *Store) write(ctx context.Context, fn func(*wtx) error) error {
	return st.submit(ctx, &request{kind: kindTx, fn: fn})
}

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
	removed, err := st.forEachSession(ctx, "SELECT id FROM sessions WHERE source = 'live' AND last_seq = -1",
		"removed a session whose first turn was never logged",
		func(t *wtx, id string, s *sessState) (bool, error) {
			if s.sum.Events != 0 {
				return false, nil
			}
			return true, t.deleteSession(id, s)
		})
	if err != nil {
		return removed, err
	}
	repaired, err := st.forEachSession(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running'",
		"repaired an interrupted turn",
		func(t *wtx, id string, s *sessState) (bool, error) {
			if s.sum.Status != StatusRunning {
				return false, nil
			}
			events, err := t.loadEvents(id)
			if err != nil {
				return false, err
			}
			closers, err := prepareEvents(id, s.sum.LastSeq+1, closersFor(events), false)
			if err != nil || len(closers) == 0 {
				return false, err
			}
			return true, t.insertEvents(id, s, closers, nil)
		})
	return append(removed, repaired...), err
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

// forEachSession runs fix, each in a write transaction of its own, on the
// sessions query selects that still exist, and returns the ids fix
// changed (logging what for each).
func (st *Store) forEachSession(ctx context.Context, query, what string, fix func(t *wtx, id string, s *sessState) (bool, error)) ([]string, error) {
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
