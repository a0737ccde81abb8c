package db

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"prism/core"
)

// Session statuses.
const (
	StatusRunning     = "running"
	StatusIdle        = "idle"
	StatusEnded       = "ended"
	StatusInterrupted = "interrupted"
)

// Session sources.
const (
	SourceLive   = "live"
	SourceImport = "import"
	SourceWatch  = "watch"
)

// sessState is a session row's derived values, as the writer keeps them.
//
// Derivation rules, applied per appended event:
//   - turn/start → status running;
//   - turn/end{interrupted} (crash repair) → interrupted; any other turn/end
//     → idle, or ended for a one-shot subagent (subagent/descriptor with
//     mode "one-shot");
//   - session/title → title (the latest wins, and beats the fallback);
//   - the first append-origin user/message from the user (source kind
//     "user"), while no session/title has been seen → title from its text,
//     whitespace collapsed, cut to 80 characters;
//   - tool/call → calls + 1; append-origin tool/result whose tool-result
//     block has isError → errors + 1;
//   - every event → last_seq = seq, updated_at = its time.
type sessState struct {
	exists    bool
	header    string
	title     string
	titled    bool
	status    string
	oneShot   bool
	calls     int64
	errors    int64
	lastSeq   int64
	updatedAt int64
	source    string

	dirty    bool
	created  bool
	replaced bool
	appended []core.Event
}

func (s *sessState) clone() *sessState {
	c := *s
	c.appended = s.appended[:len(s.appended):len(s.appended)]
	return &c
}

// wtx is one write transaction of the writer, with copy-on-write session
// state: changes reach the writer's cache only after commit.
type wtx struct {
	w       *writer
	tx      *sql.Tx
	parent  *wtx
	touched map[string]*sessState
	order   []string
	ins     *sql.Stmt // tx-bound statements, shared with children
	upd     *sql.Stmt
	sel     *sql.Stmt
	insSess *sql.Stmt
}

func newWtx(w *writer, tx *sql.Tx) *wtx {
	return &wtx{w: w, tx: tx, touched: map[string]*sessState{},
		ins: tx.Stmt(w.insEvent), upd: tx.Stmt(w.updSession), sel: tx.Stmt(w.selState), insSess: tx.Stmt(w.insSession)}
}

func (t *wtx) child() *wtx {
	return &wtx{w: t.w, tx: t.tx, parent: t, touched: map[string]*sessState{},
		ins: t.ins, upd: t.upd, sel: t.sel, insSess: t.insSess}
}

func (t *wtx) mergeInto(p *wtx) {
	for _, id := range t.order {
		if _, ok := p.touched[id]; !ok {
			p.order = append(p.order, id)
		}
		p.touched[id] = t.touched[id]
	}
}

// state returns the transaction's (mutable) state of a session.
func (t *wtx) state(id string) (*sessState, error) {
	if s, ok := t.touched[id]; ok {
		return s, nil
	}
	var base *sessState
	switch c, ok := t.w.cache[id]; {
	case t.parent != nil:
		p, err := t.parent.state(id)
		if err != nil {
			return nil, err
		}
		base = p
	case ok:
		base = c
	default:
		s := &sessState{lastSeq: -1}
		var titled, oneShot int
		err := t.sel.QueryRow(id).Scan(&s.title, &titled, &s.status, &oneShot, &s.calls, &s.errors, &s.lastSeq, &s.updatedAt, &s.source, &s.header)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, translate(err, "read session "+id)
		default:
			s.exists, s.titled, s.oneShot = true, titled == 1, oneShot == 1
		}
		base = s
	}
	s := base.clone()
	t.touched[id] = s
	t.order = append(t.order, id)
	return s, nil
}

// apply performs one batched request. rejected is the request's own
// failure (nothing was written); dbErr a statement failure.
func (t *wtx) apply(r *request) (rejected, dbErr error) {
	switch r.kind {
	case kindCreate:
		s, err := t.state(r.header.ID)
		if err != nil {
			return nil, err
		}
		if s.exists {
			return core.Errorf(core.CodeConflict, "create session %s: it already exists", r.header.ID), nil
		}
		if err := validateHeader(r.header); err != nil {
			return err, nil
		}
		return nil, t.insertSession(s, r.header, r.source)
	case kindAppend:
		s, err := t.state(r.sessionID)
		if err != nil {
			return nil, err
		}
		if !s.exists {
			return notFound(r.sessionID), nil
		}
		events, err := prepareEvents(r.sessionID, s.lastSeq+1, r.events)
		if err != nil {
			return err, nil
		}
		return nil, t.insertEvents(r.sessionID, s, events)
	}
	return fmt.Errorf("unexpected request kind %d", r.kind), nil
}

func validateHeader(h core.SessionHeader) error {
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

func (t *wtx) insertSession(s *sessState, h core.SessionHeader, source string) error {
	hj, err := jsonHeader(h)
	if err != nil {
		return err
	}
	var parent any
	if h.ParentSession != "" {
		parent = h.ParentSession
	}
	if _, err := t.insSess.Exec(h.ID, hj, parent, source, h.CreatedAt, h.CreatedAt); err != nil {
		return translate(err, "create session "+h.ID)
	}
	*s = sessState{exists: true, header: hj, status: StatusIdle, lastSeq: -1, updatedAt: h.CreatedAt, source: source, created: true, dirty: true}
	return nil
}

// replaceSession drops a session's events and resets its derived values
// (a watched file that was rewritten); the caller appends the new log.
func (t *wtx) replaceSession(s *sessState, id string, h core.SessionHeader) error {
	if _, err := t.tx.Exec("DELETE FROM events WHERE session_id = ?", id); err != nil {
		return translate(err, "replace session "+id)
	}
	hj, err := jsonHeader(h)
	if err != nil {
		return err
	}
	var parent any
	if h.ParentSession != "" {
		parent = h.ParentSession
	}
	if _, err := t.tx.Exec("UPDATE sessions SET header = ?, parent_id = ?, created_at = ? WHERE id = ?", hj, parent, h.CreatedAt, id); err != nil {
		return translate(err, "replace session "+id)
	}
	*s = sessState{exists: true, header: hj, status: StatusIdle, lastSeq: -1, updatedAt: h.CreatedAt, source: s.source, replaced: true, dirty: true, created: s.created}
	return nil
}

// prepareEvents validates an append and returns the events with their data
// compacted (so an export re-imports byte for byte).
func prepareEvents(sessionID string, next int64, events []core.Event) ([]core.Event, error) {
	out := events
	for i := range events {
		e := &events[i]
		if want := next + int64(i); e.Seq != want {
			return nil, core.Errorf(core.CodeConflict, "append to session %s: event %d has seq %d, want %d (seqs must continue the log contiguously)", sessionID, i, e.Seq, want)
		}
		if e.Type == "" {
			return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d has no type", sessionID, e.Seq)
		}
		data, err := core.Snapshot(e.Data) // lossless check and compaction, one pass when already compact
		if err != nil {
			return nil, core.Errorf(core.CodeInvalid, "append to session %s: event seq %d (%s): data: %v", sessionID, e.Seq, e.Type, err)
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

func (t *wtx) insertEvents(id string, s *sessState, events []core.Event) error {
	for i := range events {
		e := &events[i]
		var surface, sources, callID any
		if e.SurfaceOp != nil {
			b, _ := e.SurfaceOp.MarshalJSON()
			surface = string(b)
		}
		if e.SourceEventSeqs != nil {
			sources = encodeSeqs(e.SourceEventSeqs)
		}
		d := derive(s, e)
		if d.callID != "" {
			callID = d.callID
		}
		ign := 0
		if e.Ignorable {
			ign = 1
		}
		if _, err := t.ins.Exec(id, e.Seq, e.Type, e.Time, string(e.Data), ign, surface, sources, callID); err != nil {
			return translate(err, fmt.Sprintf("append to session %s: seq %d", id, e.Seq))
		}
	}
	s.appended = append(s.appended, events...)
	s.dirty = true
	return nil
}

func encodeSeqs(seqs []int64) string {
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

// finish writes the derived values of every changed session.
func (t *wtx) finish() error {
	for _, id := range t.order {
		s := t.touched[id]
		if !s.dirty {
			continue
		}
		if _, err := t.upd.Exec(s.title, b2i(s.titled), s.status, b2i(s.oneShot), s.calls, s.errors, s.lastSeq, s.updatedAt, id); err != nil {
			return translate(err, "update session "+id)
		}
	}
	return nil
}

// commits describes what the transaction changed, per session.
func (t *wtx) commits() []Commit {
	var out []Commit
	for _, id := range t.order {
		s := t.touched[id]
		if s.created || s.replaced || len(s.appended) > 0 {
			out = append(out, Commit{SessionID: id, Created: s.created, Replaced: s.replaced, Events: s.appended})
		}
	}
	return out
}

// publish moves the committed state into the writer's cache.
func (t *wtx) publish() {
	for id, s := range t.touched {
		c := *s
		c.dirty, c.created, c.replaced, c.appended = false, false, false, nil
		t.w.cache[id] = &c
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// derived is what one event contributes besides the session counters.
type derived struct{ callID string }

// derive applies one event to the session's derived values (see sessState).
func derive(s *sessState, e *core.Event) derived {
	var d derived
	s.lastSeq, s.updatedAt = e.Seq, e.Time
	switch e.Type {
	case core.EventTurnStart:
		s.status = StatusRunning
	case core.EventTurnEnd:
		var te struct {
			Reason struct {
				Kind string `json:"kind"`
			} `json:"reason"`
		}
		_ = json.Unmarshal(e.Data, &te)
		switch {
		case te.Reason.Kind == core.TurnInterrupted:
			s.status = StatusInterrupted
		case s.oneShot:
			s.status = StatusEnded
		default:
			s.status = StatusIdle
		}
	case core.EventSubagentDescr:
		var sd struct {
			Mode string `json:"mode"`
		}
		if json.Unmarshal(e.Data, &sd) == nil && sd.Mode == "one-shot" {
			s.oneShot = true
		}
	case core.EventSessionTitle:
		var st struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(e.Data, &st) == nil && strings.TrimSpace(st.Title) != "" {
			s.title, s.titled = cutTitle(st.Title, 200), true
		}
	case core.EventUserMessage:
		if s.titled || s.title != "" || e.SurfaceOp == nil || e.SurfaceOp.Replace {
			break
		}
		var m struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Source struct {
				Kind string `json:"kind"`
			} `json:"source"`
		}
		if json.Unmarshal(e.Data, &m) != nil || m.Source.Kind != core.SourceUser {
			break
		}
		for _, c := range m.Content {
			if c.Type == core.BlockText && strings.TrimSpace(c.Text) != "" {
				s.title = cutTitle(c.Text, 80)
				break
			}
		}
	case core.EventToolCall, core.EventApprovalAsked:
		var c struct {
			CallID string `json:"callId"`
		}
		_ = json.Unmarshal(e.Data, &c)
		d.callID = c.CallID
		if e.Type == core.EventToolCall {
			s.calls++
		}
	case core.EventCodeDispatch, core.EventCodeDispatchOpen:
		var c struct {
			RootCallID string `json:"rootCallId"`
		}
		_ = json.Unmarshal(e.Data, &c)
		d.callID = c.RootCallID
	case core.EventToolResult:
		var r struct {
			Message struct {
				Content []struct {
					IsError bool `json:"isError"`
				} `json:"content"`
				Source struct {
					CallID string `json:"callId"`
				} `json:"source"`
			} `json:"message"`
		}
		_ = json.Unmarshal(e.Data, &r)
		d.callID = r.Message.Source.CallID
		if e.SurfaceOp != nil && !e.SurfaceOp.Replace && len(r.Message.Content) > 0 && r.Message.Content[0].IsError {
			s.errors++
		}
	}
	return d
}

// cutTitle collapses whitespace and cuts s to at most n characters.
func cutTitle(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// jsonHeader is the stored form of a header; delegationDepth is always
// present (0 when unset), as dsh writes it and as export writes it.
func jsonHeader(h core.SessionHeader) (string, error) {
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

func compactTo(buf *bytes.Buffer, b []byte) error { return json.Compact(buf, b) }
