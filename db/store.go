package db

import (
	"context"

	"prism/core"
	"prism/store"
)

// CreateSession records a new, empty session whose events prism appends
// (source "live"). It fails with core.CodeConflict when the id exists.
func (st *Store) CreateSession(ctx context.Context, h core.SessionHeader) error {
	return st.submit(ctx, &request{kind: kindCreate, header: h, source: store.SourceLive})
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

// IfEmpty runs fn if the store holds no session and reports whether it
// ran. A SQLite file has one prism process, so nothing else can start a
// session meanwhile (the PostgreSQL store serialises nodes here).
func (st *Store) IfEmpty(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	page, err := st.ListSessions(ctx, store.ListOptions{Limit: 1})
	if err != nil || len(page.Sessions) > 0 {
		return false, err
	}
	return true, fn(ctx)
}
