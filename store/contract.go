package store

import (
	"context"
	"crypto/sha256"
	"io"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/core/share"
)

// Store is the contract of a session store engine: what the web server
// (through package backend's adapters), the agent runner, the command-line
// tools and a source's watcher consume, whichever engine serves. Package db
// (SQLite) and package pgstore (PostgreSQL) implement it, each checked by
// a `var _ store.Store = (*Store)(nil)`; store/storetest holds both to what
// it means. A new engine is a package implementing Store plus one line in
// the opener (engine.Open).
type Store interface {
	// CreateSession and AppendEvents: the core.EventStore a core.Session
	// commits to (both engines are core.CheckedStores too).
	core.EventStore

	// ListSessions returns a page of sessions as the list shows them
	// (their headers only with ListOptions.WithHeader).
	ListSessions(ctx context.Context, o ListOptions) (SessionPage, error)
	// Session returns one session's list row (core.CodeNotFound if none).
	Session(ctx context.Context, id string) (SessionInfo, error)
	// LoadSession returns a session's row and whole log.
	LoadSession(ctx context.Context, id string) (*SessionLog, error)
	// EventsAfter returns the events of a session after seq afterSeq.
	EventsAfter(ctx context.Context, id string, afterSeq int64) ([]core.Event, error)
	// EventsAfterEach returns, in one read, each session's events after
	// the seq after names for it, in seq order (the board's tails of many
	// running sessions); a session that does not exist is absent.
	EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error)
	// EventsUpTo returns the events of a session up to seq, included.
	EventsUpTo(ctx context.Context, id string, seq int64) ([]core.Event, error)
	// CallEvents returns the events of one tool call, and those of the
	// types withTypes (the context a call's page shows).
	CallEvents(ctx context.Context, id, callID string, withTypes ...string) ([]core.Event, error)
	// Export writes a session's log as prism JSONL.
	Export(ctx context.Context, id string, w io.Writer) error

	// ImportFile imports a session file (prism JSONL, dsh session.jsonl,
	// .jsonl.zstd or a dsh export .zip); each file is one transaction.
	ImportFile(ctx context.Context, path string) ([]ImportResult, error)
	// ImportFileWith is ImportFile with options (--as, --replace).
	ImportFileWith(ctx context.Context, path string, o ImportOptions) ([]ImportResult, error)
	// ImportWith imports a file read from r (size is -1 when unknown).
	ImportWith(ctx context.Context, name string, r io.Reader, size int64, o ImportOptions) ([]ImportResult, error)
	// SyncLog makes a stored session's log the given one (a watched
	// file's): it creates, extends or (with replace) replaces it, and
	// reports which (an ImportResult outcome) and how many events it added.
	SyncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error)

	// CreateFork creates a forked session whole, in one transaction: its
	// row (h, source live; on PostgreSQL this node runs it), its seed
	// (seqs from 0) and note, the fork note on its source. All of it is
	// stored or none: a taken id is ForkIDTaken, an unknown source
	// core.CodeNotFound, a seed the store refuses the append's error, each
	// naming what failed.
	CreateFork(ctx context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error

	// DeleteSession deletes a session for good, with its share links and
	// subagent sessions.
	DeleteSession(ctx context.Context, id string) (Deleted, error)
	// DeleteEndedBefore deletes the sessions whose last event is older
	// than before (retention).
	DeleteEndedBefore(ctx context.Context, before time.Time) ([]Deleted, error)
	// RepairOpenTurns closes the turns a previous run left open (crash
	// repair at startup) and returns the ids of the sessions it changed.
	RepairOpenTurns(ctx context.Context) ([]string, error)
	// IfEmpty runs fn when the store holds no session, once however many
	// nodes ask together, and reports whether it ran.
	IfEmpty(ctx context.Context, fn func(ctx context.Context) error) (bool, error)

	// CreateShare makes a share link and returns it with its token, which
	// is not stored.
	CreateShare(ctx context.Context, spec share.Spec) (share.Share, string, error)
	// Shares lists a session's links, oldest first.
	Shares(ctx context.Context, sessionID string) ([]share.Share, error)
	// Share returns one link by id.
	Share(ctx context.Context, id string) (share.Share, error)
	// ShareByToken returns the link whose token has this hash.
	ShareByToken(ctx context.Context, hash share.Hash) (share.Share, error)
	// RevokeShare revokes a link for good.
	RevokeShare(ctx context.Context, id string) (share.Share, error)
	// RecordShareView counts a view of a link.
	RecordShareView(ctx context.Context, id string) error

	// AddOwnerLogin, OwnerLoginValid and RevokeOwnerLogin keep the owner's
	// login cookies (web/ownerauth's Logins), so a sign-out survives
	// restarts and holds on every node.
	AddOwnerLogin(ctx context.Context, idHash [sha256.Size]byte, expiresAt int64) error
	// OwnerLoginValid reports whether a login is stored and expires after now.
	OwnerLoginValid(ctx context.Context, idHash [sha256.Size]byte, now int64) (bool, error)
	// RevokeOwnerLogin deletes a login; an unknown one is no error.
	RevokeOwnerLogin(ctx context.Context, idHash [sha256.Size]byte) error

	// Notes returns the notes beside a session's log (labels, …) that q
	// selects; PutNote writes a new note or replaces one's data (the last
	// write wins); RemoveNote marks one removed at the session's last seq.
	// Notes never touch the log; a write calls Options.Committed with the
	// session's Commit.Notes set.
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
	RemoveNote(ctx context.Context, session, id string) (notes.Note, error)
	// OpenNotes returns the notes of one kind not removed, across
	// sessions, oldest first (a note on a call its log no longer has is
	// not returned): the open attention firings /api/attention lists.
	OpenNotes(ctx context.Context, kind string) ([]notes.Note, error)

	// Close drains queued writes and releases the store; writes after
	// Close fail with ErrClosed.
	Close() error
}
