package core

import "context"

// EventStore is the durable session log a Session writes through; package
// db implements it on SQLite.
type EventStore interface {
	// CreateSession records a new, empty session. It fails with CodeConflict
	// when a session with the same id exists.
	CreateSession(ctx context.Context, h SessionHeader) error
	// AppendEvents durably appends events to a session. Their seqs must
	// continue the stored log contiguously (else CodeConflict). It returns
	// only after the commit that holds them; on error nothing of the batch
	// is stored.
	AppendEvents(ctx context.Context, sessionID string, events []Event) error
}

// CheckedStore is an EventStore that takes, with the events a Session
// commits, what the Session knows of them, so it need not walk their data
// again: the Session checked every event's data and wrote it in Snapshot's
// compact form, and computed the facts (FactsOf) of those it built from
// core's type for their event type. A Session uses AppendChecked when its
// store implements it. Package db's Store does.
type CheckedStore interface {
	EventStore
	// AppendChecked appends events as AppendEvents does, taking their data
	// as checked (lossless, compact JSON) and facts[i], when not nil, as
	// events[i]'s facts — what FactsOf would decode from its data. The
	// caller vouches for both.
	AppendChecked(ctx context.Context, sessionID string, events []Event, facts []*EventFacts) error
}
