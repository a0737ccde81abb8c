package db

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/sessionlog"
)

// Import outcomes.
const (
	// ImportCreated: the session was new and is now stored.
	ImportCreated = "created"
	// ImportUnchanged: the same log was already stored (nothing written).
	ImportUnchanged = "unchanged"
	// ImportExtended: the stored log was a prefix of the file's and the
	// missing tail was appended (e.g. a session imported while it ran).
	ImportExtended = "extended"
	// ImportReplaced: the stored log was replaced by the file's — a
	// watched session's file was rewritten, or an import with
	// ImportOptions.Replace met a session stored with a different log.
	ImportReplaced = "replaced"
)

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
}

// ImportResult reports one session of an imported file.
type ImportResult struct {
	SessionID string
	ParentID  string
	Entry     string // the zip entry ("" outside a zip)
	Outcome   string // ImportCreated, ImportUnchanged, ImportExtended or ImportReplaced
	Events    int    // events in the stored log
	Added     int    // events this import wrote
	Revoked   int    // share links revoked because the log was replaced
	Before    int    // events the stored log held before the import (0 if new)
	Original  string // the id in the file, when ImportOptions.As renamed it
	Repaired  int    // crash-repair closers appended (then the session is interrupted)
	Torn      string // a torn tail that was ignored, if any
}

// ImportFile imports a session log file: prism JSONL, dsh session.jsonl,
// session.jsonl.zstd or a dsh export .zip (the session and its subagents,
// each its own session linked to its parent), detected by content. A dsh
// session keeps its id.
//
// The whole file commits in one transaction or not at all. Each log is
// checked first: a record that does not decode, a seq gap, an unknown event
// type without the ignorable marker, or a log core.ValidateLog refuses fails
// the file with one error naming the file, the entry, the frame or line and
// the reason (code core.CodeInvalid). A log whose last turn is open gets
// dsh's crash repair (core.InterruptedTurnClosers) appended, as dsh does
// when it loads such a log, and so ends up interrupted.
//
// Importing a session that is already stored does not duplicate it: if the
// stored log equals the file's (after repair) nothing is written
// (ImportUnchanged); if it is a prefix, the rest is appended
// (ImportExtended); otherwise the import fails with core.CodeConflict.
func (st *Store) ImportFile(ctx context.Context, path string) ([]ImportResult, error) {
	return st.ImportFileWith(ctx, path, ImportOptions{})
}

// ImportFileWith is ImportFile with options (--as, --replace). Options
// that cannot apply (As with a file of several sessions, an invalid id)
// fail before anything is written, and so does any error: the store is
// left as it was.
func (st *Store) ImportFileWith(ctx context.Context, path string, o ImportOptions) ([]ImportResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	release, err := st.acquireImport(ctx, false)
	if err != nil {
		return nil, err
	}
	defer release()
	defer debug.FreeOSMemory() // see releaseMemory
	logs, _, err := sessionlog.ReadFile(path, st.opts.Limits)
	if err != nil {
		return nil, err
	}
	return st.importLogs(ctx, path, logs, o)
}

// Import is ImportFile for a file held by a reader (an upload); name is
// used in errors. JSONL and zstd are decoded as they stream in; a zip is
// first copied to a temporary file.
func (st *Store) Import(ctx context.Context, name string, r io.Reader, size int64) ([]ImportResult, error) {
	return st.ImportWith(ctx, name, r, size, ImportOptions{})
}

// ImportWith is Import with options, as ImportFileWith.
func (st *Store) ImportWith(ctx context.Context, name string, r io.Reader, size int64, o ImportOptions) ([]ImportResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	release, err := st.acquireImport(ctx, false)
	if err != nil {
		return nil, err
	}
	defer release()
	defer debug.FreeOSMemory() // see releaseMemory
	logs, _, err := sessionlog.Decode(r, size, st.opts.Limits)
	if err != nil {
		var fe *sessionlog.FormatError
		if ok := asFormatError(err, &fe); ok && fe.File == "" {
			fe.File = name
		}
		return nil, err
	}
	return st.importLogs(ctx, name, logs, o)
}

// check validates the options on their own.
func (o ImportOptions) check() error {
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

// importRetryAfter is what a busy import answer suggests waiting.
const importRetryAfter = 5 * time.Second

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

// acquireImport takes an import slot. With wait unset it fails at once
// with a *BusyError when none is free; with wait set it waits for one
// (until ctx ends).
func (st *Store) acquireImport(ctx context.Context, wait bool) (release func(), err error) {
	select {
	case st.imports <- struct{}{}:
		return func() { <-st.imports }, nil
	default:
	}
	if !wait {
		return nil, &BusyError{After: importRetryAfter, Message: fmt.Sprintf(
			"the server is already importing %d files (its limit of concurrent imports); try again in a few seconds", cap(st.imports))}
	}
	select {
	case st.imports <- struct{}{}:
		return func() { <-st.imports }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// An import ends with debug.FreeOSMemory, whether it succeeded or was
// refused: a decode holds up to its memory budget (and a long line's
// buffer) for a moment, and without it the process would keep that peak
// until the runtime's scavenger gets to it. Imports are rare; one forced
// collection each is cheap next to the import.

func asFormatError(err error, fe **sessionlog.FormatError) bool {
	e, ok := err.(*sessionlog.FormatError)
	if ok {
		*fe = e
	}
	return ok
}

// prepared is a decoded log ready to store.
type prepared struct {
	log      *sessionlog.Log
	events   []core.Event // log events plus closers
	repaired int
}

// prepareLog checks a decoded log the way dsh checks a loaded seed and
// appends crash repair if its last turn is open.
func prepareLog(file string, l *sessionlog.Log) (prepared, error) {
	for i, e := range l.Events {
		if !e.Ignorable && !core.IsKnownEventType(e.Type) {
			pos := l.Pos[i]
			return prepared{}, &sessionlog.FormatError{File: file, Entry: l.Entry, Frame: pos.Frame, Offset: -1, Line: pos.Line,
				Reason: fmt.Sprintf("unknown required event type %q (seq %d): prism cannot interpret this session (only types marked ignorable may be unknown)", e.Type, e.Seq)}
		}
	}
	if err := core.ValidateLog(l.Header, l.Events); err != nil {
		where := file
		if l.Entry != "" {
			where += ": " + l.Entry
		}
		if _, ok := err.(core.Coded); ok {
			return prepared{}, fmt.Errorf("%s: invalid session log: %w", where, err)
		}
		return prepared{}, &core.Error{Name: "Error", Code: core.CodeInvalid, Message: fmt.Sprintf("%s: invalid session log: %v", where, err), Err: err}
	}
	p := prepared{log: l, events: l.Events}
	if closers := closersFor(l.Events); len(closers) > 0 {
		p.events = append(append([]core.Event(nil), l.Events...), closers...)
		p.repaired = len(closers)
	}
	return p, nil
}

func (st *Store) importLogs(ctx context.Context, file string, logs []*sessionlog.Log, o ImportOptions) ([]ImportResult, error) {
	original := ""
	if o.As != "" {
		if len(logs) != 1 {
			ids := make([]string, len(logs))
			for i, l := range logs {
				ids[i] = l.Header.ID
			}
			return nil, core.Errorf(core.CodeInvalid, "%s: importing under another id (--as, ?as=) needs a file holding exactly one session; it holds %d (%s); nothing was imported", file, len(logs), strings.Join(ids, ", "))
		}
		original = logs[0].Header.ID
		if original != o.As {
			l := *logs[0]
			l.Header.ID = o.As
			logs = []*sessionlog.Log{&l}
		} else {
			original = ""
		}
	}
	var preps []prepared
	for _, l := range logs {
		p, err := prepareLog(file, l)
		if err != nil {
			return nil, err
		}
		preps = append(preps, p)
	}
	inFile := map[string]bool{}
	for _, p := range preps {
		inFile[p.log.Header.ID] = true
	}
	var results []ImportResult
	err := st.write(ctx, func(t *wtx) error {
		results = results[:0]
		for _, p := range preps {
			if err := t.checkParent(file, p.log, inFile); err != nil {
				return err
			}
		}
		for _, p := range preps {
			h := p.log.Header
			revoked, before := 0, 0
			if prev, err := t.state(h.ID); err == nil && prev.exists {
				before = int(prev.sum.Events)
			}
			outcome, added, err := t.syncLog(h, p.events, SourceImport, o.Replace)
			if err == nil && outcome == ImportReplaced {
				revoked, err = t.revokeShares(h.ID, st.now().UnixMilli())
			}
			if err != nil {
				where := file
				if p.log.Entry != "" {
					where += ": " + p.log.Entry
				}
				return fmt.Errorf("import %s: %w", where, err)
			}
			results = append(results, ImportResult{SessionID: h.ID, ParentID: h.ParentSession, Entry: p.log.Entry, Outcome: outcome,
				Events: len(p.events), Added: added, Repaired: p.repaired, Torn: p.log.Torn, Revoked: revoked, Original: original, Before: before})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		st.log.Info("imported session", logkey.File, file, logkey.SessionID, r.SessionID, logkey.Outcome, r.Outcome, logkey.Events, r.Events, logkey.Added, r.Added, logkey.Repaired, r.Repaired)
	}
	return results, nil
}

// revokeShares revokes every live share link of a session whose log was
// replaced: a link promised the session as it was.
func (t *wtx) revokeShares(id string, now int64) (int, error) {
	res, err := t.tx.Exec("UPDATE shares SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL", now, id)
	if err != nil {
		return 0, translate(err, "revoke the share links of session "+id)
	}
	n, err := res.RowsAffected()
	return int(n), translate(err, "revoke the share links of session "+id)
}

// checkParent refuses a subagent log whose parent session is neither in
// the same file nor stored: it would be an orphan no page links to.
func (t *wtx) checkParent(file string, l *sessionlog.Log, inFile map[string]bool) error {
	parent := l.Header.ParentSession
	if parent == "" || inFile[parent] {
		return nil
	}
	s, err := t.state(parent)
	if err != nil || s.exists {
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

// syncLog makes the stored session equal h plus events: it creates it,
// leaves it, or appends the missing tail. A stored log that is not a prefix
// of events is a conflict, unless replace is set: then its log is replaced
// (the watcher sets it for sessions tailed from a file, source watch;
// import --replace for any session but a running live one).
func (t *wtx) syncLog(h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error) {
	if err := validateHeader(h); err != nil {
		return "", 0, err
	}
	s, err := t.state(h.ID)
	if err != nil {
		return "", 0, err
	}
	if !s.exists {
		if err := t.insertSession(s, h, source); err != nil {
			return "", 0, err
		}
		evs, err := prepareEvents(h.ID, 0, events, false)
		if err != nil {
			return "", 0, err
		}
		return ImportCreated, len(evs), t.insertEvents(h.ID, s, evs, nil)
	}
	stored, err := t.loadEvents(h.ID)
	if err != nil {
		return "", 0, err
	}
	same, diffAt := prefixEqual(stored, events)
	hj, err := jsonHeader(h)
	if err != nil {
		return "", 0, err
	}
	if hj != s.header {
		same, diffAt = false, -1
	}
	if source == SourceWatch && s.source != SourceWatch {
		replace = false // a watched file never replaces a session prism runs or imported
	}
	switch {
	case same && len(stored) == len(events):
		return ImportUnchanged, 0, nil
	case same:
		evs, err := prepareEvents(h.ID, int64(len(stored)), events[len(stored):], false)
		if err != nil {
			return "", 0, err
		}
		return ImportExtended, len(evs), t.insertEvents(h.ID, s, evs, nil)
	case replace && s.source == SourceLive && s.sum.Status == StatusRunning:
		return "", 0, core.Errorf(core.CodeConflict, "session %s is running here; a running session cannot be replaced (cancel it, or import under another id with --as)", h.ID)
	case replace:
		if err := t.replaceSession(s, h.ID, h, source); err != nil {
			return "", 0, err
		}
		evs, err := prepareEvents(h.ID, 0, events, false)
		if err != nil {
			return "", 0, err
		}
		return ImportReplaced, len(evs), t.insertEvents(h.ID, s, evs, nil)
	}
	hint := ""
	if source == SourceImport {
		hint = "; import it under another id (--as NEW_ID, ?as=NEW_ID) or replace the stored one (--replace, ?replace=1)"
	}
	if diffAt < 0 {
		return "", 0, core.Errorf(core.CodeConflict, "session %s already exists with a different header%s", h.ID, hint)
	}
	return "", 0, core.Errorf(core.CodeConflict, "session %s already exists with a different log (they differ at seq %d; stored %d events, file %d)%s", h.ID, diffAt, len(stored), len(events), hint)
}

// prefixEqual reports whether stored is a prefix of events (byte-equal
// envelopes), and else the first seq where they differ.
func prefixEqual(stored, events []core.Event) (bool, int) {
	if len(stored) > len(events) {
		for i := range events {
			if !sameEvent(stored[i], events[i]) {
				return false, i
			}
		}
		return false, len(events)
	}
	for i := range stored {
		if !sameEvent(stored[i], events[i]) {
			return false, i
		}
	}
	return true, 0
}

func sameEvent(a, b core.Event) bool {
	x, err1 := a.MarshalJSON()
	y, err2 := b.MarshalJSON()
	if err1 != nil || err2 != nil {
		return false
	}
	if bytes.Equal(x, y) {
		return true
	}
	// Data may differ only by insignificant whitespace.
	var cx, cy bytes.Buffer
	return compactTo(&cx, x) == nil && compactTo(&cy, y) == nil && bytes.Equal(cx.Bytes(), cy.Bytes())
}
