package db

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/debug"
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
	// ImportReplaced: a watched session's file was rewritten and its log
	// replaced (watch only).
	ImportReplaced = "replaced"
)

// ImportResult reports one session of an imported file.
type ImportResult struct {
	SessionID string
	ParentID  string
	Entry     string // the zip entry ("" outside a zip)
	Outcome   string // ImportCreated, ImportUnchanged or ImportExtended
	Events    int    // events in the stored log
	Added     int    // events this import wrote
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
	return st.importLogs(ctx, path, logs)
}

// Import is ImportFile for a file held by a reader (an upload); name is
// used in errors. JSONL and zstd are decoded as they stream in; a zip is
// first copied to a temporary file.
func (st *Store) Import(ctx context.Context, name string, r io.Reader, size int64) ([]ImportResult, error) {
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
	return st.importLogs(ctx, name, logs)
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

func (st *Store) importLogs(ctx context.Context, file string, logs []*sessionlog.Log) ([]ImportResult, error) {
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
			outcome, added, err := t.syncLog(h, p.events, SourceImport, false)
			if err != nil {
				where := file
				if p.log.Entry != "" {
					where += ": " + p.log.Entry
				}
				return fmt.Errorf("import %s: %w", where, err)
			}
			results = append(results, ImportResult{SessionID: h.ID, ParentID: h.ParentSession, Entry: p.log.Entry, Outcome: outcome,
				Events: len(p.events), Added: added, Repaired: p.repaired, Torn: p.log.Torn})
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
// of events is a conflict, unless replace is set and the session was
// itself tailed from a file (source watch): then its log is replaced.
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
	switch {
	case same && len(stored) == len(events):
		return ImportUnchanged, 0, nil
	case same:
		evs, err := prepareEvents(h.ID, int64(len(stored)), events[len(stored):], false)
		if err != nil {
			return "", 0, err
		}
		return ImportExtended, len(evs), t.insertEvents(h.ID, s, evs, nil)
	case replace && s.source == SourceWatch:
		if err := t.replaceSession(s, h.ID, h); err != nil {
			return "", 0, err
		}
		evs, err := prepareEvents(h.ID, 0, events, false)
		if err != nil {
			return "", 0, err
		}
		return ImportReplaced, len(evs), t.insertEvents(h.ID, s, evs, nil)
	case diffAt < 0:
		return "", 0, core.Errorf(core.CodeConflict, "session %s already exists with a different header", h.ID)
	default:
		return "", 0, core.Errorf(core.CodeConflict, "session %s already exists with a different log (they differ at seq %d; stored %d events, file %d)", h.ID, diffAt, len(stored), len(events))
	}
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
