package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"prism/core"
	"prism/sources/dsh"
)

// ValidateHeader checks a header a store is asked to create.
func ValidateHeader(h core.SessionHeader) error {
	if h.ID == "" {
		return core.Errorf(core.CodeInvalid, "session header: empty id")
	}
	if h.Version != core.SessionFormatVersion {
		return core.Errorf(core.CodeInvalid, "session %s: unsupported session format version %d", h.ID, h.Version)
	}
	if h.CreatedAt < 0 {
		return core.Errorf(core.CodeInvalid, "session %s: negative createdAt", h.ID)
	}
	return nil
}

// HeaderJSON is the stored form of a header; delegationDepth is always
// present (0 when unset), as dsh writes it and as export writes it.
func HeaderJSON(h core.SessionHeader) (string, error) {
	if h.DelegationDepth == nil {
		zero := int64(0)
		h.DelegationDepth = &zero
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encode header: %w", err)
	}
	return string(b), nil
}

// PrepareEvents validates an append whose first event must have seq next
// and returns the events with their data compacted (so an export
// re-imports byte for byte). A seq that does not continue the log is
// core.CodeConflict; a malformed event core.CodeInvalid. checked data (from
// core.CheckedStore.AppendChecked) is taken as lossless and compact already.
func PrepareEvents(sessionID string, next int64, events []core.Event, checked bool) ([]core.Event, error) {
	out := events
	for i := range events {
		e := &events[i]
		if want := next + int64(i); e.Seq != want {
			return nil, SeqConflict(sessionID, i, e.Seq, want)
		}
		if e.Type == "" {
			return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d has no type", sessionID, e.Seq)
		}
		if !core.IsSafeInteger(e.Time) {
			// A log on disk cannot hold it (its JSON keeps safe integers),
			// and search cursors carry times as float64.
			return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d (%s): time %d is not a safe integer (milliseconds within ±(2^53−1))", sessionID, e.Seq, e.Type, e.Time)
		}
		data := e.Data
		if !checked {
			var err error
			data, err = core.Snapshot(e.Data) // lossless check and compaction, one pass when already compact
			if err != nil {
				return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d (%s): data: %v", sessionID, e.Seq, e.Type, err)
			}
		}
		surface := core.IsSurfaceType(e.Type)
		if !surface && (e.SurfaceOp != nil || e.SourceEventSeqs != nil) {
			return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d (%s) is not a surface type but carries surfaceOp or sourceEventSeqs", sessionID, e.Seq, e.Type)
		}
		if surface && e.SurfaceOp == nil {
			return nil, core.Errorf(core.CodeInvalid, "append to session %s: surface event seq %d (%s) has no surfaceOp", sessionID, e.Seq, e.Type)
		}
		for _, s := range e.SourceEventSeqs {
			if s < 0 || s >= e.Seq {
				return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d: sourceEventSeqs entry %d is not an earlier seq", sessionID, e.Seq, s)
			}
		}
		if len(data) != len(e.Data) {
			if &out[0] == &events[0] {
				out = append([]core.Event(nil), events...)
			}
			out[i].Data = data
		}
	}
	return out, nil
}

// SeqConflict is the error of an append whose i-th event has seq got where
// the log needs want.
func SeqConflict(sessionID string, i int, got, want int64) error {
	if got < want {
		return core.Errorf(core.CodeConflict, "append to session %s: event %d has seq %d, but the stored log already reaches seq %d: "+
			"another writer appended to this session first (seqs must continue the log contiguously; only the node that runs a session appends to it)",
			sessionID, i, got, want-1)
	}
	return core.Errorf(core.CodeConflict, "append to session %s: event %d has seq %d, want %d (seqs must continue the log contiguously)", sessionID, i, got, want)
}

// Closers returns core.InterruptedTurnClosers for a loaded log, with seqs
// continuing it.
func Closers(events []core.Event) []core.Event {
	closers := core.InterruptedTurnClosers(events)
	next := int64(len(events))
	for i := range closers {
		closers[i].Seq = next + int64(i)
	}
	return closers
}

// EncodeSeqs is the stored form of sourceEventSeqs: a JSON array.
func EncodeSeqs(seqs []int64) string {
	b := make([]byte, 0, 2+len(seqs)*4)
	b = append(b, '[')
	for i, s := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s, 10)
	}
	return string(append(b, ']'))
}

// DecodeSeqs reads EncodeSeqs' form.
func DecodeSeqs(s string) ([]int64, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	out := []int64{}
	if s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// EncodeSurfaceOp is the stored form of a surfaceOp (its JSON).
func EncodeSurfaceOp(op *core.SurfaceOp) string {
	b, _ := op.MarshalJSON()
	return string(b)
}

// DecodeSurfaceOp reads EncodeSurfaceOp's form.
func DecodeSurfaceOp(s string) (*core.SurfaceOp, error) {
	if s == `"append"` {
		return core.AppendOp(), nil
	}
	op := new(core.SurfaceOp)
	if err := op.UnmarshalJSON([]byte(s)); err != nil {
		return nil, err
	}
	return op, nil
}

// Prepared is a decoded log ready to store.
type Prepared struct {
	Log      *dsh.Log
	Events   []core.Event // the log's events plus crash-repair closers
	Repaired int          // how many closers were appended
}

// PrepareLog checks a decoded log the way dsh checks a loaded seed and
// appends crash repair if its last turn is open. file names it in errors.
func PrepareLog(file string, l *dsh.Log) (Prepared, error) {
	for i, e := range l.Events {
		if !e.Ignorable && !core.IsKnownEventType(e.Type) {
			pos := l.Pos[i]
			return Prepared{}, &dsh.FormatError{File: file, Entry: l.Entry, Frame: pos.Frame, Offset: -1, Line: pos.Line,
				Reason: fmt.Sprintf("unknown required event type %q (seq %d): prism cannot interpret this session (only types marked ignorable may be unknown)", e.Type, e.Seq)}
		}
	}
	validate := core.ValidateLog
	if l.DataChecked {
		validate = core.ValidateDecodedLog
	}
	if err := validate(l.Header, l.Events); err != nil {
		where := file
		if l.Entry != "" {
			where += ": " + l.Entry
		}
		if l.HeaderLine > 1 { // a later session of a file holding several
			where += fmt.Sprintf(": session %s (header on line %d)", l.Header.ID, l.HeaderLine)
		}
		if _, ok := err.(core.Coded); ok {
			return Prepared{}, fmt.Errorf("%s: invalid session log: %w", where, err)
		}
		return Prepared{}, &core.Error{Name: "Error", Code: core.CodeInvalid, Message: fmt.Sprintf("%s: invalid session log: %v", where, err), Err: err}
	}
	p := Prepared{Log: l, Events: l.Events}
	if closers := Closers(l.Events); len(closers) > 0 {
		p.Events = append(append([]core.Event(nil), l.Events...), closers...)
		p.Repaired = len(closers)
	}
	return p, nil
}

// Stored is what a store holds of a session an import or a watcher
// reconciles with a file.
type Stored struct {
	Header string // HeaderJSON of its header
	Source string
	Events []core.Event
	// Running: its status is running (a live one is never replaced).
	Running bool
}

// SyncPlan is what Reconcile decides: the outcome and, for ImportExtended,
// the index of the first event to append (for ImportCreated and
// ImportReplaced every event is written; for ImportUnchanged none).
type SyncPlan struct {
	Outcome string
	From    int
}

// Reconcile decides how to make a stored session equal h plus events,
// written from source: leave it, append the missing tail, or — when
// replace is set — replace its log (the watcher sets replace for sessions
// tailed from a file, and a watched file never replaces a session of
// another source; import --replace sets it for any session but a running
// live one). A stored log that is not a prefix of events, or a different
// header, is otherwise core.CodeConflict.
func Reconcile(s Stored, h core.SessionHeader, events []core.Event, source string, replace bool) (SyncPlan, error) {
	same, diffAt := prefixEqual(s.Events, events)
	hj, err := HeaderJSON(h)
	if err != nil {
		return SyncPlan{}, err
	}
	if hj != s.Header {
		same, diffAt = false, -1
	}
	if (source == SourceWatch || source == SourceOTel) && s.Source != source {
		replace = false // a watched file (or spans) never replaces a session of another source
	}
	switch {
	case same && len(s.Events) == len(events):
		return SyncPlan{Outcome: ImportUnchanged, From: len(events)}, nil
	case same:
		return SyncPlan{Outcome: ImportExtended, From: len(s.Events)}, nil
	case replace && s.Source == SourceLive && s.Running:
		return SyncPlan{}, core.Errorf(core.CodeConflict, "session %s is running here; a running session cannot be replaced (cancel it, or import under another id with --as)", h.ID)
	case replace:
		return SyncPlan{Outcome: ImportReplaced}, nil
	}
	hint := ""
	if source == SourceImport {
		hint = "; import it under another id (--as NEW_ID, ?as=NEW_ID) or replace the stored one (--replace, ?replace=1)"
	}
	if diffAt < 0 {
		return SyncPlan{}, core.Errorf(core.CodeConflict, "session %s already exists with a different header%s", h.ID, hint)
	}
	return SyncPlan{}, core.Errorf(core.CodeConflict, "session %s already exists with a different log (they differ at seq %d; stored %d events, file %d)%s", h.ID, diffAt, len(s.Events), len(events), hint)
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
	return json.Compact(&cx, x) == nil && json.Compact(&cy, y) == nil && bytes.Equal(cx.Bytes(), cy.Bytes())
}

// ForkIDTaken is CreateFork's refusal of an id a session has already:
// dsh's SESSION_ALREADY_EXISTS (core.ForkError), naming the source and
// the id, as agent.Runner.Fork answers it.
func ForkIDTaken(source, id string) error {
	return core.ForkError(core.CodeSessionAlreadyExists, "cannot fork session %q into %q: a session with that id already exists", source, id)
}
