package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/sources/dsh"
)

// ImportRetryAfter is what a busy import answer suggests waiting.
const ImportRetryAfter = 5 * time.Second

// DefaultMaxImports is how many imports decode at once when a store's
// options do not say.
const DefaultMaxImports = 2

// BusyError refuses work the store has no capacity for right now (every
// import slot is taken). It is coded core.CodeUnavailable; RetryAfter says
// when to try again (HTTP answers 503 with a Retry-After header).
type BusyError struct {
	Message string
	After   time.Duration
}

func (e *BusyError) Error() string { return e.Message }

// ErrorName returns "BusyError".
func (e *BusyError) ErrorName() string { return "BusyError" }

// ErrorCode returns core.CodeUnavailable.
func (e *BusyError) ErrorCode() string { return core.CodeUnavailable }

// RetryAfter returns how long to wait before trying again.
func (e *BusyError) RetryAfter() time.Duration { return e.After }

// ImportSlots bound the imports one process decodes at once: with the
// decoder's memory budget (dsh.Limits) they bound the memory
// imports take.
type ImportSlots chan struct{}

// NewImportSlots returns n slots (DefaultMaxImports when n ≤ 0).
func NewImportSlots(n int) ImportSlots {
	if n <= 0 {
		n = DefaultMaxImports
	}
	return make(ImportSlots, n)
}

// Acquire takes a slot. With wait unset it fails at once with a
// *BusyError when none is free; with wait set it waits for one (until ctx
// ends). release gives the slot back.
func (s ImportSlots) Acquire(ctx context.Context, wait bool) (release func(), err error) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	default:
	}
	if !wait {
		return nil, &BusyError{After: ImportRetryAfter, Message: fmt.Sprintf(
			"the server is already importing %d files (its limit of concurrent imports); try again in a few seconds", cap(s))}
	}
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CheckParent refuses a subagent log whose parent session is neither in
// the same file (inFile holds the file's session ids) nor stored (exists
// asks the store): it would be an orphan no page links to. A fork (a
// parentSession without origin "subagent") is no child and imports alone.
func CheckParent(file string, l *dsh.Log, inFile map[string]bool, exists func(id string) (bool, error)) error {
	parent := l.Header.ChildOf()
	if parent == "" || inFile[parent] {
		return nil
	}
	ok, err := exists(parent)
	if err != nil || ok {
		return err
	}
	where := file
	if l.Entry != "" {
		where += ": " + l.Entry
	}
	return core.Errorf(core.CodeInvalid,
		"%s: session %s is a subagent of session %s, which is neither in this file nor in the store; import the parent session first (or dsh's export .zip, which holds the whole family); nothing was imported",
		where, l.Header.ID, parent)
}

// ImportOptions change what an import does with the sessions it meets.
type ImportOptions struct {
	// As imports the file's session under this id instead of its own (a
	// crash-repaired copy beside the original, say). The file must hold
	// exactly one session; the id is 1–128 letters, digits, '.', '_' or
	// '-'.
	As string
	// Replace lets the file's log replace a stored session whose log
	// differs (instead of failing with core.CodeConflict): the stored
	// events are dropped, the file's stored, and the session's share
	// links revoked. A running live session is never replaced.
	Replace bool
	// Turn, if set, is called once the file is decoded and checked, just
	// before its transaction: the import waits for it and fails with its
	// error. A caller importing files concurrently orders their
	// transactions with it (prism import decodes the next file while the
	// one before commits).
	Turn func(context.Context) error
	// FileIndex asks the engine to file the search documents of the
	// events it imports in the import's own transaction, prepared before
	// it, instead of after its commit: for a bulk importer no live writer
	// waits behind (prism import). A store that serves leaves it unset, so
	// an upload's transaction holds the writer no longer than its rows
	// take (SQLite files its index lag while idle, db/searchlag.go). An
	// engine that always indexes in the transaction ignores it.
	FileIndex bool
	// Relaxed lets the engine commit the import without waiting for the
	// disk (SQLite: synchronous=NORMAL for its transaction): the import
	// stays atomic — a crash leaves the file all imported or not at all —
	// but a power failure may undo it until a later durable commit, or a
	// Sync (Syncer), reaches the disk. For a bulk importer that reports a
	// file only once a durable commit follows it (prism import). An engine
	// whose commits are always durable ignores it.
	Relaxed bool
	// Queued, if set, is called once the import's transaction is queued
	// for an engine that commits its transactions in the order they were
	// queued (SQLite's one writer): an import whose Turn waits for it
	// commits after this one. linksFollow reports that this import writes
	// more after its transaction (the links of subagents it holds), so a
	// caller keeping a one-by-one outcome waits for the import's end
	// instead. An engine that does not order its transactions so never
	// calls it.
	Queued func(linksFollow bool)
}

// Syncer is a store whose commits may be relaxed (ImportOptions.Relaxed):
// Sync returns once every commit before it is on disk.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Check validates the options on their own.
func (o ImportOptions) Check() error {
	if o.As == "" {
		return nil
	}
	if len(o.As) > 128 {
		return core.Errorf(core.CodeInvalid, "import as %.20q…: a session id is at most 128 characters, got %d", o.As, len(o.As))
	}
	for _, r := range o.As {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return core.Errorf(core.CodeInvalid, "import as %q: a session id may hold only letters, digits, '.', '_' and '-'", o.As)
		}
	}
	return nil
}

// Rename applies As to a file's logs: the one log under its new id, and
// its id in the file (original, "" when not renamed). A file of several
// sessions cannot be imported under another id (core.CodeInvalid).
func (o ImportOptions) Rename(file string, logs []*dsh.Log) (out []*dsh.Log, original string, err error) {
	if o.As == "" {
		return logs, "", nil
	}
	if len(logs) != 1 {
		const show = 5 // a prism JSONL file may hold thousands
		var ids []string
		for _, l := range logs[:min(len(logs), show)] {
			ids = append(ids, l.Header.ID)
		}
		if len(logs) > show {
			ids = append(ids, "…")
		}
		return nil, "", core.Errorf(core.CodeInvalid, "%s: importing under another id (--as, ?as=) needs a file holding exactly one session; it holds %d (%s); nothing was imported", file, len(logs), strings.Join(ids, ", "))
	}
	if logs[0].Header.ID == o.As {
		return logs, "", nil
	}
	l := *logs[0]
	l.Header.ID = o.As
	return []*dsh.Log{&l}, logs[0].Header.ID, nil
}

// Deleted reports what deleting one session removed.
type Deleted struct {
	// SessionID is the session that was asked for.
	SessionID string `json:"id"`
	// Subagents are the ids of its subagent sessions (and theirs), deleted
	// with it.
	Subagents []string `json:"subagents"`
	// Events and Shares count the removed events and share links, of the
	// session and its subagents together.
	Events int64 `json:"events"`
	Shares int64 `json:"shares"`
}

// DeleteEach deletes the sessions ids in order through del, skipping those
// deleted meanwhile (core.CodeNotFound), and returns what it deleted; it
// stops at the first other error.
func DeleteEach(ctx context.Context, ids []string, del func(ctx context.Context, id string) (Deleted, error)) ([]Deleted, error) {
	var out []Deleted
	for _, id := range ids {
		d, err := del(ctx, id)
		if core.ErrorCode(err) == core.CodeNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// logEachMax is the most sessions of one file whose imports are each
// logged at INFO; a file of more gets one INFO line, and each session a
// DEBUG line.
const logEachMax = 10

// LogImported logs what importing file did: a line per session, at INFO
// for a file of up to logEachMax sessions, else at DEBUG under one INFO
// line for the file.
func LogImported(ctx context.Context, log *slog.Logger, file string, results []ImportResult) {
	level := slog.LevelInfo
	if len(results) > logEachMax {
		level = slog.LevelDebug
		events, added := 0, 0
		for _, r := range results {
			events += r.Events
			added += r.Added
		}
		log.InfoContext(ctx, "imported file", logkey.File, file, logkey.Sessions, len(results), logkey.Events, events, logkey.Added, added)
	}
	for _, r := range results {
		log.Log(ctx, level, "imported session", logkey.File, file, logkey.SessionID, r.SessionID, logkey.Outcome, r.Outcome,
			logkey.Events, r.Events, logkey.Added, r.Added, logkey.Repaired, r.Repaired)
	}
}

// SideNote is a note an import stores beside a session's log, with what
// search keeps of it.
type SideNote struct {
	notes.Note
	Facts notes.Facts
}

// SideNotes returns the notes an import stores beside log l (an export
// zip's notes.jsonl), under session id: each checked again (notes.Check),
// with a fresh id when the log was imported under another id (renamed), so
// that they never collide with the original's. A note the store already
// holds (by id) is left as it is: importing the same zip again adds none.
func SideNotes(id string, l *dsh.Log, renamed bool) ([]SideNote, error) {
	out := make([]SideNote, 0, len(l.SideNotes))
	for _, n := range l.SideNotes {
		data, facts, err := notes.Check(notes.Input{Session: id, Kind: n.Kind, CallID: n.CallID, Author: n.Author, Data: n.Data})
		if err != nil {
			return nil, fmt.Errorf("note %s of session %s: %w", n.ID, id, err)
		}
		n.Session, n.Data = id, data
		if renamed {
			n.ID = core.NewID()
		}
		out = append(out, SideNote{Note: n, Facts: facts})
	}
	return out, nil
}

// CheckFamilyCycles refuses a file whose sessions' parents (origin
// "subagent" children) form a cycle — a session its own ancestor —
// naming the sessions of the cycle: no order of import could store it.
func CheckFamilyCycles(file string, logs []*dsh.Log) error {
	parent := map[string]string{}
	for _, l := range logs {
		if p := l.Header.ChildOf(); p != "" {
			parent[l.Header.ID] = p
		}
	}
	for _, l := range logs {
		seen := map[string]bool{}
		path := []string{}
		for id := l.Header.ID; id != ""; id = parent[id] {
			if seen[id] {
				return core.Errorf(core.CodeInvalid,
					"%s: the sessions' parentSession links form a cycle (%s → %s): a subagent cannot be its own ancestor; nothing was imported",
					file, strings.Join(path, " → "), id)
			}
			seen[id] = true
			path = append(path, id)
		}
	}
	return nil
}
