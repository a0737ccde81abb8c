// Package store is the engine-neutral half of prism's session stores: the
// vocabulary both engines speak (a session's list row, list options and
// pages, commits, import outcomes) and the rules they share (what an append
// must satisfy, crash repair of an imported or interrupted log, how an
// import reconciles a stored session with a file, list cursors). Package db
// implements it on SQLite, package pgstore on PostgreSQL; neither imports
// the other, and this package imports no database library.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"prism/core"
	"prism/core/share"
)

// Session sources: where a session's log comes from.
const (
	// SourceLive: appended by prism (a session the agent runs).
	SourceLive = "live"
	// SourceImport: an imported file.
	SourceImport = "import"
	// SourceWatch: tailed from a dsh sessions directory.
	SourceWatch = "watch"
	// SourceOTel: derived from received OpenTelemetry spans (ids begin
	// "otel-"); only a span receipt writes or deletes it, and the watcher
	// never replaces it.
	SourceOTel = "otel"
)

// SessionInfo is one session as a list shows it: its header, where its log
// comes from, and the core.Summary of its log (title, status, counters,
// tokens, times), computed in the transaction that appended the events.
// Times are epoch milliseconds.
type SessionInfo struct {
	ID       string             `json:"id"`
	Header   core.SessionHeader `json:"header"`
	ParentID string             `json:"parentId,omitempty"`
	Source   string             `json:"source"` // live | import | watch | otel
	// CreatedAt is the header's; UpdatedAt the latest event time, or
	// CreatedAt while the log is empty (the list's order).
	CreatedAt int64 `json:"createdAt"`
	UpdatedAt int64 `json:"updatedAt"`
	core.Summary
}

// SessionLog is a session with its whole log.
type SessionLog struct {
	Info   SessionInfo
	Events []core.Event
}

// Commit describes the durable change to one session made by one commit.
type Commit struct {
	SessionID string
	// Created is set when the commit created the session; Replaced when it
	// replaced the session's whole log (a watched file that was rewritten,
	// an import --replace); Deleted when it deleted the session (Events is
	// then empty).
	Created, Replaced, Deleted bool
	// Notes is set when the commit wrote one of the session's notes
	// (PutNote, RemoveNote): pages read the session's notes again.
	Notes bool
	// Events are the events the commit appended, in seq order. They are
	// shared, with every observer and with the store (SQLite's search
	// index files the same values after the commit): read them, never
	// change them.
	Events []core.Event
	// Local is set when this node's own transaction made the change (on
	// SQLite, always); a change a PostgreSQL node learned from another
	// node's commit is not Local. What must happen once per commit across
	// nodes (pushing a turn to a collector) follows Local commits only.
	Local bool
}

// Import outcomes.
const (
	// ImportCreated: the session was new and is now stored.
	ImportCreated = "created"
	// ImportUnchanged: the same log was already stored (nothing written).
	ImportUnchanged = "unchanged"
	// ImportSkipped: a watched file whose session was deleted during the
	// watcher's run (nothing written; the next run imports it again).
	ImportSkipped = "skipped"
	// ImportExtended: the stored log was a prefix of the file's and the
	// missing tail was appended (e.g. a session imported while it ran).
	ImportExtended = "extended"
	// ImportReplaced: the stored log was replaced by the file's — a
	// watched session's file was rewritten, or an import with
	// ImportOptions.Replace met a session stored with a different log.
	ImportReplaced = "replaced"
)

// ImportResult reports one session of an imported file.
type ImportResult struct {
	SessionID string
	ParentID  string
	Entry     string   // the zip entry ("" outside a zip)
	Outcome   string   // ImportCreated, ImportUnchanged, ImportExtended or ImportReplaced
	Events    int      // events in the stored log
	Added     int      // events this import wrote
	Revoked   int      // share links revoked because the log was replaced
	Before    int      // events the stored log held before the import (0 if new)
	Original  string   // the id in the file, when ImportOptions.As renamed it
	Repaired  int      // crash-repair closers appended (then the session is interrupted)
	Torn      string   // a torn tail that was ignored, if any
	Kept      []string // lines a foreign decoder kept raw (malformed), each naming its line
}

// Notes are what an import has to say about one session beyond its
// outcome, for people: a rename (ImportOptions.As), lines of another
// agent's transcript kept raw, a torn tail that was ignored, a crash
// repair, an unchanged session, a replacement. prism
// import prints them on stderr; the import API answers them per session.
func (r ImportResult) Notes() []string {
	var out []string
	if r.Original != "" {
		out = append(out, fmt.Sprintf("session %s imported as %s", r.Original, r.SessionID))
	}
	for _, k := range r.Kept {
		out = append(out, fmt.Sprintf("session %s: %s", r.SessionID, k))
	}
	if r.Torn != "" {
		out = append(out, fmt.Sprintf("session %s: torn tail ignored: %s", r.SessionID, r.Torn))
	}
	if r.Repaired > 0 {
		out = append(out, fmt.Sprintf("session %s: last turn was open; appended %d crash-repair events (status interrupted)", r.SessionID, r.Repaired))
	}
	switch r.Outcome {
	case ImportUnchanged:
		out = append(out, fmt.Sprintf("session %s was already imported; unchanged", r.SessionID))
	case ImportReplaced:
		out = append(out, fmt.Sprintf("replaced session %s (its %d stored events by the file's %d; %d share links revoked)", r.SessionID, r.Before, r.Events, r.Revoked))
	}
	return out
}

// NotFound is the error of an unknown session id.
func NotFound(id string) error {
	return core.Errorf(core.CodeNotFound, "session %s not found", id)
}

// ShareRecord is a stored share link with its token's hash: what moving a
// database to another engine copies (a share's token is never stored, so
// its hash is the link).
type ShareRecord struct {
	share.Share
	TokenHash share.Hash
}

// Counts are what a database holds, for verifying a copy.
type Counts struct {
	Sessions, Events, Shares int64
}

// EncodeModelUsage is the model_usage column of a summary: its Models as
// JSON (core.ModelUsage's fields), or "" when it has none.
func EncodeModelUsage(ms []core.ModelUsage) (string, error) {
	if len(ms) == 0 {
		return "", nil
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return "", fmt.Errorf("encode model usage: %w", err)
	}
	return string(b), nil
}

// DecodeModelUsage reads a model_usage column ("" is none).
func DecodeModelUsage(s string) ([]core.ModelUsage, error) {
	if s == "" {
		return nil, nil
	}
	var ms []core.ModelUsage
	if err := json.Unmarshal([]byte(s), &ms); err != nil {
		return nil, err
	}
	return ms, nil
}

// Translated is the prelude both engines' translate share: it reports
// whether err needs no engine-specific mapping, and what to return then —
// nil for nil, err itself when it is prism's already (a core.Coded), and
// a context's cancellation or deadline wrapped with what was being done.
// Anything else (ok false) is the engine's to map.
func Translated(err error, what string) (out error, ok bool) {
	if err == nil {
		return nil, true
	}
	var coded core.Coded
	if errors.As(err, &coded) {
		return err, true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err), true
	}
	return nil, false
}
