// Package notes is the vocabulary of notes: facts about a session kept
// beside its log, never in it (a person's label on a call, which call
// spawned a subagent, which call of a fork was replayed, when an attention
// rule fired). Each kind is registered once here (KindOf) with the
// validation of its data; both stores check every note with Check before
// they write it, and the web server lets clients write only the kinds
// marked Client.
package notes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"prism/core"
)

// Note kinds. A kind is registered once, in KindOf: its name, whether
// clients may write it, and the validation of its data.
const (
	// KindLabel is a person's label on a call or on the session
	// (LabelData): the only kind clients may write.
	KindLabel = "label"
	// KindLink says which call spawned which subagent (the server's).
	KindLink = "link"
	// KindReplayed says which call of a fork was replayed (the server's).
	KindReplayed = "replayed"
	// KindAttention records that an attention rule fired (the server's).
	KindAttention = "attention"
	// KindRepair says why a running prism closed a turn by crash repair
	// (RepairData), on the turn/end the repair appended (the server's):
	// dsh's turn/end{interrupted} carries no reason, so the log stays
	// plain dsh and the why lives here.
	KindRepair = "repair"
	// KindFork, on a session, names one of its forks (ForkData; the
	// server's): what its header, the list's fork count and the tree of
	// its forks read.
	KindFork = "fork"
)

// MaxData is the largest data a note may hold, in bytes of JSON
// text: a larger one is core.CodeTooLarge.
const MaxData = 64 << 10

// MaxLabel is the longest label, in characters.
const MaxLabel = 64

// Note is one fact about a session kept beside its log, never in it. Times
// are epoch milliseconds.
type Note struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Kind    string `json:"kind"`
	// CallID is the call the note is about ("" = the whole session).
	CallID string `json:"callId,omitempty"`
	// AtSeq is the seq from which the note applies: for a person's note
	// the session's last seq when it was made (-1 for an empty log); for
	// one derived from the log the seq of the event it is about.
	AtSeq  int64  `json:"atSeq"`
	Time   int64  `json:"time"`
	Author string `json:"author,omitempty"`
	// Data is the kind's own JSON, as written (compacted).
	Data json.RawMessage `json:"data"`
	// RemovedAt and RemovedAtSeq are set once the note was removed: from
	// RemovedAtSeq (the session's last seq then) on, it no longer applies.
	RemovedAt    int64  `json:"removedAt,omitempty"`
	RemovedAtSeq *int64 `json:"removedAtSeq,omitempty"`
}

// AppliesAt reports whether the note applies to the session as it was
// right after event seq: AtSeq <= seq < RemovedAtSeq.
func (n Note) AppliesAt(seq int64) bool {
	return n.AtSeq <= seq && (n.RemovedAtSeq == nil || seq < *n.RemovedAtSeq)
}

// Input is a note to write (PutNote).
type Input struct {
	// ID, when set, names the note whose data is replaced (the last write
	// wins; its kind, call and AtSeq stay); "" makes a new note.
	ID      string
	Session string
	Kind    string
	CallID  string
	Author  string
	// AtSeq is the seq the note applies from (nil: the session's last
	// seq); ignored when ID is set.
	AtSeq *int64
	Data  json.RawMessage
	// Once, for a new note whose data has a string member "key", writes
	// it only if the session has no note of its kind, removed or not,
	// with the same key: otherwise PutNote fails with core.CodeConflict
	// (OnceConflict). Checked and written in one transaction, so of two
	// nodes raising the same attention firing one writes it.
	Once bool
}

// OnceKey returns the "key" member of a note's data ("" when none).
func OnceKey(data json.RawMessage) string {
	var d struct {
		Key string `json:"key"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ""
	}
	return d.Key
}

// OnceConflict is the error of a note written Once whose key the session
// has already.
func OnceConflict(session, kind, key, id string) error {
	return core.Errorf(core.CodeConflict, "session %s has a %s note with key %q already (%s)", session, kind, key, id)
}

// Query selects a session's notes (Notes).
type Query struct {
	// ID keeps the note with this id ("" = every note).
	ID string
	// Kind keeps notes of this kind ("" = every kind).
	Kind string
	// AsOf, when set, gives the notes that apply right after that event
	// (Note.AppliesAt), removed ones included; nil gives the notes not
	// removed.
	AsOf *int64
	// Removed, with AsOf nil, gives removed notes too.
	Removed bool
}

// Kind is one registered kind of note.
type Kind struct {
	Name string
	// Client says whether clients (the API, the card's form) may write
	// it; the others are written by the server only.
	Client bool
	// check validates the data and returns what search needs of it.
	check func(data []byte) (Facts, error)
}

// Facts are what the store keeps beside a note's data for search: a
// label's text and whether it has a comment.
type Facts struct {
	Label     string
	Commented bool
}

// KindOf returns the registered kind name (false: no such kind).
func KindOf(name string) (Kind, bool) {
	switch name {
	case KindLabel:
		return Kind{Name: name, Client: true, check: checkLabel}, true
	case KindLink:
		return Kind{Name: name, check: checkLink}, true
	case KindAttention:
		return Kind{Name: name, check: checkAttention}, true
	case KindReplayed:
		return Kind{Name: name, check: checkReplayed}, true
	case KindFork:
		return Kind{Name: name, check: checkFork}, true
	case KindRepair:
		return Kind{Name: name, check: checkRepair}, true
	}
	return Kind{}, false
}

// AttentionData is the data of a KindAttention note: the rule that
// fired, why (the badge's text), the key it is raised once by (within its
// session) and, once a person acknowledged it, when (epoch ms) and who.
type AttentionData struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	Key       string `json:"key,omitempty"`
	ClearedAt int64  `json:"clearedAt,omitempty"`
	ClearedBy string `json:"clearedBy,omitempty"`
}

func checkAttention(data []byte) (Facts, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var a AttentionData
	if err := d.Decode(&a); err != nil {
		return Facts{}, fmt.Errorf("data must be {rule, reason, key?, clearedAt?, clearedBy?}: %v", err)
	}
	switch {
	case strings.TrimSpace(a.Rule) == "":
		return Facts{}, fmt.Errorf("data must name its rule")
	case a.ClearedAt < 0:
		return Facts{}, fmt.Errorf("clearedAt must be epoch milliseconds, got %d", a.ClearedAt)
	case !utf8.ValidString(a.Reason) || !utf8.ValidString(a.ClearedBy):
		return Facts{}, fmt.Errorf("reason and clearedBy must be UTF-8 text")
	}
	return Facts{}, nil
}

// LabelData is the data of a KindLabel note.
type LabelData struct {
	Label string       `json:"label"`
	Score *json.Number `json:"score,omitempty"`
	// Note is markdown, rendered through the page's sanitizer.
	Note string `json:"note,omitempty"`
}

// Check validates a note's kind and data as every store does before
// it writes one, and returns the data compacted with its facts: an unknown
// kind or data that is not the kind's shape is core.CodeInvalid, data past
// MaxData core.CodeTooLarge.
func Check(in Input) (json.RawMessage, Facts, error) {
	k, ok := KindOf(in.Kind)
	if !ok {
		return nil, Facts{}, core.Errorf(core.CodeInvalid, "unknown note kind %q (known: label, link, replayed, attention, repair, fork)", in.Kind)
	}
	if len(in.Data) > MaxData {
		return nil, Facts{}, core.Errorf(core.CodeTooLarge, "note data is %d bytes, past the limit of %d", len(in.Data), MaxData)
	}
	if strings.ContainsFunc(in.CallID, unicode.IsControl) || strings.ContainsFunc(in.Author, unicode.IsControl) {
		return nil, Facts{}, core.Errorf(core.CodeInvalid, "note call id and author must be text without control characters")
	}
	if err := core.CheckJSON(in.Data); err != nil {
		return nil, Facts{}, core.Errorf(core.CodeInvalid, "note data: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, in.Data); err != nil {
		return nil, Facts{}, core.Errorf(core.CodeInvalid, "note data: %v", err)
	}
	facts, err := k.check(buf.Bytes())
	if err != nil {
		return nil, Facts{}, core.Errorf(core.CodeInvalid, "%s note: %v", k.Name, err)
	}
	return buf.Bytes(), facts, nil
}

// ReplayedData is the data of a KindReplayed note on a fork's call: the
// call was answered with the recorded result of the source session's call
// whose tool/call has seq SourceSeq, without running.
type ReplayedData struct {
	SourceSession string `json:"sourceSession"`
	SourceSeq     int64  `json:"sourceSeq"`
}

// ForkData is the data of a KindFork note on a session: Session is a fork
// of it, cut after SeedLength events (the note's AtSeq is the last of
// them, the boundary's turn/end).
type ForkData struct {
	Session    string `json:"session"`
	SeedLength int64  `json:"seedLength"`
}

// ParseFork decodes a fork note's data (as Check accepted it).
func ParseFork(data []byte) (ForkData, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var f ForkData
	if err := d.Decode(&f); err != nil {
		return ForkData{}, fmt.Errorf("data must be {session, seedLength}: %v", err)
	}
	return f, nil
}

func checkFork(data []byte) (Facts, error) {
	if len(data) == 0 || data[0] != '{' {
		return Facts{}, fmt.Errorf("data must be a JSON object {session, seedLength}")
	}
	f, err := ParseFork(data)
	if err != nil {
		return Facts{}, err
	}
	switch {
	case strings.TrimSpace(f.Session) == "":
		return Facts{}, fmt.Errorf("session must name the fork")
	case len(f.Session) > 128 || strings.ContainsFunc(f.Session, unicode.IsControl) || !utf8.ValidString(f.Session):
		return Facts{}, fmt.Errorf("session %q is not a session id (at most 128 characters of text)", f.Session)
	case f.SeedLength < 0:
		return Facts{}, fmt.Errorf("seedLength must be the non-negative number of inherited events")
	}
	return Facts{}, nil
}

func checkReplayed(data []byte) (Facts, error) {
	if len(data) == 0 || data[0] != '{' {
		return Facts{}, fmt.Errorf("data must be a JSON object {sourceSession, sourceSeq}")
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var r struct {
		SourceSession *string `json:"sourceSession"`
		SourceSeq     *int64  `json:"sourceSeq"`
	}
	if err := d.Decode(&r); err != nil {
		return Facts{}, fmt.Errorf("data must be {sourceSession, sourceSeq}: %v", err)
	}
	switch {
	case r.SourceSession == nil || strings.TrimSpace(*r.SourceSession) == "":
		return Facts{}, fmt.Errorf("sourceSession must name the source session")
	case strings.ContainsFunc(*r.SourceSession, unicode.IsControl):
		return Facts{}, fmt.Errorf("sourceSession must be text without control characters")
	case r.SourceSeq == nil || *r.SourceSeq < 0:
		return Facts{}, fmt.Errorf("sourceSeq must be the non-negative seq of the source's tool/call")
	}
	return Facts{}, nil
}

// LinkData is the data of a KindLink note, written on the parent session
// with the spawning call's id as CallID and the seq of its tool/call as
// AtSeq: Child is the child session's id; Background says the call
// returned at once with the child's id; Inferred says the link was not
// recorded by the runner but matched afterwards (an imported dsh family:
// the child's subagent/descriptor label against the call's description
// and times).
type LinkData struct {
	Child      string `json:"child"`
	Background bool   `json:"background"`
	Inferred   bool   `json:"inferred"`
}

// Link returns the note that says call callID of session parent, logged at
// seq atSeq, spawned the child d.Child: what prism's runner writes when a
// child starts, and what every source that knows a child (dsh imports,
// Claude Code and Codex subagent files, OpenTelemetry spans) writes through
// the store's PutNote. The input is checked as a store would.
func Link(parent, callID string, atSeq int64, d LinkData) (Input, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return Input{}, fmt.Errorf("link note: %w", err)
	}
	in := Input{Session: parent, Kind: KindLink, CallID: callID, AtSeq: &atSeq, Data: data}
	if callID == "" {
		return Input{}, core.Errorf(core.CodeInvalid, "link note on session %s: no spawning call id", parent)
	}
	if _, _, err := Check(in); err != nil {
		return Input{}, err
	}
	return in, nil
}

// ParseLink decodes a link note's data (as Check accepted it).
func ParseLink(data []byte) (LinkData, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var l LinkData
	if err := d.Decode(&l); err != nil {
		return LinkData{}, fmt.Errorf("data must be {child, background, inferred}: %v", err)
	}
	return l, nil
}

func checkLink(data []byte) (Facts, error) {
	if len(data) == 0 || data[0] != '{' {
		return Facts{}, fmt.Errorf("data must be a JSON object {child, background, inferred}")
	}
	l, err := ParseLink(data)
	if err != nil {
		return Facts{}, err
	}
	switch {
	case l.Child == "":
		return Facts{}, fmt.Errorf("child is empty: a link names the child session it spawned")
	case len(l.Child) > 128 || strings.ContainsFunc(l.Child, unicode.IsControl) || !utf8.ValidString(l.Child):
		return Facts{}, fmt.Errorf("child %q is not a session id (at most 128 characters of text)", l.Child)
	}
	return Facts{}, nil
}

func checkLabel(data []byte) (Facts, error) {
	if len(data) == 0 || data[0] != '{' {
		return Facts{}, fmt.Errorf("data must be a JSON object {label, score?, note?}")
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	d.UseNumber()
	var l LabelData
	if err := d.Decode(&l); err != nil {
		return Facts{}, fmt.Errorf("data must be {label, score?, note?}: %v", err)
	}
	label, err := CheckLabel(l.Label)
	if err != nil {
		return Facts{}, err
	}
	if label != l.Label {
		return Facts{}, fmt.Errorf("label %q has surrounding spaces", l.Label)
	}
	if !utf8.ValidString(l.Note) {
		return Facts{}, fmt.Errorf("note must be UTF-8 text")
	}
	return Facts{Label: strings.ToLower(label), Commented: strings.TrimSpace(l.Note) != ""}, nil
}

// RepairData is the data of a KindRepair note: why crash repair closed
// the turn whose turn/end is at the note's AtSeq — Reason.Kind one of
// core.InterruptStoreUnreachable, core.InterruptNodeLost,
// core.InterruptStoreRefused, Reason.Reason the text a page shows.
type RepairData struct {
	Reason core.CancelCause `json:"reason"`
}

// Repair returns the note that records why crash repair closed a turn
// whose turn/end has seq atSeq.
func Repair(session string, atSeq int64, why core.CancelCause) Input {
	data, err := json.Marshal(RepairData{Reason: why})
	if err != nil { // a struct of strings always encodes
		panic(fmt.Sprintf("notes: repair data: %v", err))
	}
	return Input{Session: session, Kind: KindRepair, AtSeq: &atSeq, Data: data}
}

// RepairReason returns why crash repair closed the turn whose turn/end
// has seq endSeq, from a session's notes that apply at seq (ok false:
// no such note).
func RepairReason(ns []Note, endSeq, seq int64) (core.CancelCause, bool) {
	for _, n := range ns {
		if n.Kind != KindRepair || n.AtSeq != endSeq || !n.AppliesAt(seq) {
			continue
		}
		var d RepairData
		if json.Unmarshal(n.Data, &d) == nil && d.Reason.Kind != "" {
			return d.Reason, true
		}
	}
	return core.CancelCause{}, false
}

func checkRepair(data []byte) (Facts, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var r RepairData
	if err := d.Decode(&r); err != nil {
		return Facts{}, fmt.Errorf("data must be {reason: {kind, reason?}}: %v", err)
	}
	switch r.Reason.Kind {
	case core.InterruptStoreUnreachable, core.InterruptNodeLost, core.InterruptStoreRefused:
	default:
		return Facts{}, fmt.Errorf("reason kind %q is not one of %s, %s, %s", r.Reason.Kind,
			core.InterruptStoreUnreachable, core.InterruptNodeLost, core.InterruptStoreRefused)
	}
	if !utf8.ValidString(r.Reason.Reason) || strings.ContainsFunc(r.Reason.Reason, unicode.IsControl) {
		return Facts{}, fmt.Errorf("reason text must be text without control characters")
	}
	return Facts{}, nil
}

// CheckLabel validates a label's text and returns it trimmed: 1 to
// MaxLabel characters of UTF-8 text without control characters.
func CheckLabel(label string) (string, error) {
	label = strings.TrimSpace(label)
	switch {
	case label == "":
		return "", fmt.Errorf("label must not be empty")
	case !utf8.ValidString(label) || strings.ContainsFunc(label, unicode.IsControl):
		return "", fmt.Errorf("label must be text without control characters")
	case utf8.RuneCountInString(label) > MaxLabel:
		return "", fmt.Errorf("label is longer than %d characters", MaxLabel)
	}
	return label, nil
}

// NotFound is the error of an unknown (or removed) note.
func NotFound(session, id string) error {
	return core.Errorf(core.CodeNotFound, "note %s of session %s not found", id, session)
}

// CallNotFound is the error of a note on a call the session does not have.
func CallNotFound(session, callID string) error {
	return core.Errorf(core.CodeNotFound, "call %s not found in session %s", callID, session)
}
