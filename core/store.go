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
