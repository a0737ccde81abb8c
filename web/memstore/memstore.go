// Package memstore is an in-memory session store that implements the
// interfaces package web consumes (SessionSource, CommitFeed, Importer). It
// backs tests and the server until the SQLite store is wired in; nothing
// survives a restart.
package memstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"prism/core"
	"prism/web"
)

// Store is an in-memory session log. It is safe for concurrent use.
type Store struct {
	// Now stamps appended events; it defaults to time.Now.
	Now func() time.Time

	mu       sync.RWMutex
	sessions map[string]*session
	hooks    map[int]func(string, []core.Event)
	replaces map[int]func(string)
	nextHook int
	// commitMu orders commit notifications: each session's events reach the
	// hooks in seq order.
	commitMu sync.Mutex
}

type session struct {
	h             core.SessionHeader
	events        []core.Event
	sum           web.SessionSummary
	open          bool // a turn is open
	firstUserText string
}

// New returns an empty store.
func New() *Store {
	return &Store{Now: time.Now, sessions: map[string]*session{}, hooks: map[int]func(string, []core.Event){},
		replaces: map[int]func(string){}}
}

var _ interface {
	web.SessionSource
	web.CommitFeed
	web.Importer
} = (*Store)(nil)

// OnCommit implements web.CommitFeed.
func (s *Store) OnCommit(fn func(string, []core.Event)) func() {
	s.mu.Lock()
	id := s.nextHook
	s.nextHook++
	s.hooks[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.hooks, id)
		s.mu.Unlock()
	}
}

// OnReplace implements web.CommitFeed.
func (s *Store) OnReplace(fn func(string)) func() {
	s.mu.Lock()
	id := s.nextHook
	s.nextHook++
	s.replaces[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.replaces, id)
		s.mu.Unlock()
	}
}

// ReplaceSession replaces a session's header and whole log (seqs from 0),
// as the SQLite store does when a watched dsh file was rewritten, then
// notifies the OnReplace functions (not the OnCommit ones).
func (s *Store) ReplaceSession(ctx context.Context, h core.SessionHeader, events []core.Event) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	old := s.sessions[h.ID]
	if old == nil {
		s.mu.Unlock()
		return core.Errorf(core.CodeNotFound, "no session %q", h.ID)
	}
	for i, e := range events {
		if e.Seq != int64(i) || len(e.Data) == 0 {
			s.mu.Unlock()
			return core.Errorf(core.CodeInvalid, "event %d: seq %d, want %d with data", i, e.Seq, i)
		}
	}
	if h.CreatedAt == 0 {
		h.CreatedAt = old.h.CreatedAt
	}
	ss := &session{h: h, sum: web.SessionSummary{ID: h.ID, CreatedAt: h.CreatedAt, UpdatedAt: h.CreatedAt, ParentID: h.ParentSession, Status: "empty"}}
	for _, e := range events {
		ss.add(e)
	}
	s.sessions[h.ID] = ss
	fns := make([]func(string), 0, len(s.replaces))
	for _, f := range s.replaces {
		fns = append(fns, f)
	}
	s.mu.Unlock()
	for _, f := range fns {
		f(h.ID)
	}
	return nil
}

func (s *Store) notify(id string, events []core.Event) {
	s.mu.RLock()
	fns := make([]func(string, []core.Event), 0, len(s.hooks))
	for _, f := range s.hooks {
		fns = append(fns, f)
	}
	s.mu.RUnlock()
	for _, f := range fns {
		f(id, events)
	}
}

// CreateSession records a new, empty session (core.EventStore).
func (s *Store) CreateSession(ctx context.Context, h core.SessionHeader) error {
	if h.ID == "" {
		return core.Errorf(core.CodeInvalid, "session id is required")
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	if s.sessions[h.ID] != nil {
		s.mu.Unlock()
		return core.Errorf(core.CodeConflict, "session %q exists", h.ID)
	}
	if h.CreatedAt == 0 {
		h.CreatedAt = s.Now().UnixMilli()
	}
	s.sessions[h.ID] = &session{h: h, sum: web.SessionSummary{ID: h.ID, CreatedAt: h.CreatedAt, UpdatedAt: h.CreatedAt, ParentID: h.ParentSession, Status: "empty"}}
	s.mu.Unlock()
	s.notify(h.ID, nil)
	return nil
}

// AppendEvents appends events whose seqs continue the log (core.EventStore),
// then notifies the commit feed.
func (s *Store) AppendEvents(ctx context.Context, id string, events []core.Event) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.appendLocked(id, events)
}

func (s *Store) appendLocked(id string, events []core.Event) error {
	s.mu.Lock()
	ss := s.sessions[id]
	if ss == nil {
		s.mu.Unlock()
		return core.Errorf(core.CodeNotFound, "no session %q", id)
	}
	next := int64(len(ss.events))
	for i, e := range events {
		if e.Seq != next+int64(i) {
			s.mu.Unlock()
			return core.Errorf(core.CodeConflict, "event seq %d does not continue the log at %d", e.Seq, next+int64(i))
		}
		if len(e.Data) == 0 {
			s.mu.Unlock()
			return core.Errorf(core.CodeInvalid, "event %d has no data", e.Seq)
		}
	}
	for _, e := range events {
		ss.add(e)
	}
	s.mu.Unlock()
	s.notify(id, slices.Clone(events))
	return nil
}

// Append appends one event of type typ with data, stamping seq and time,
// and returns it.
func (s *Store) Append(ctx context.Context, id, typ string, data any, op *core.SurfaceOp) (core.Event, error) {
	raw, err := core.MarshalNoEscape(data)
	if err != nil {
		return core.Event{}, err
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.RLock()
	ss := s.sessions[id]
	var next int64
	if ss != nil {
		next = int64(len(ss.events))
	}
	s.mu.RUnlock()
	e := core.Event{Type: typ, Seq: next, Time: s.Now().UnixMilli(), Data: raw, SurfaceOp: op}
	return e, s.appendLocked(id, []core.Event{e})
}

func (ss *session) add(e core.Event) {
	ss.events = append(ss.events, e)
	sm := &ss.sum
	sm.Events++
	if e.Time > sm.UpdatedAt {
		sm.UpdatedAt = e.Time
	}
	switch e.Type {
	case core.EventTurnStart:
		ss.open = true
	case core.EventTurnEnd:
		ss.open = false
		var d core.TurnEnd
		if json.Unmarshal(e.Data, &d) == nil && d.Reason.Kind == core.TurnInterrupted {
			sm.Status = "interrupted"
		} else {
			sm.Status = "idle"
		}
	case core.EventToolCall:
		sm.Calls++
	case core.EventToolResult:
		var d core.ToolResultData
		if e.IsAppendOrigin() && json.Unmarshal(e.Data, &d) == nil && d.Projection().IsError {
			sm.Errors++
		}
	case core.EventSessionTitle:
		var d core.SessionTitle
		if json.Unmarshal(e.Data, &d) == nil {
			sm.Title = d.Title
		}
	case core.EventUserMessage:
		if ss.firstUserText == "" {
			var m core.Message
			if json.Unmarshal(e.Data, &m) == nil && m.Source.Kind == core.SourceUser {
				ss.firstUserText = strings.TrimSpace(m.Content.PlainText())
			}
		}
	}
	if ss.open {
		sm.Status = "running"
	} else if sm.Status == "empty" || sm.Status == "running" {
		sm.Status = "idle"
	}
}

func (ss *session) summary() web.SessionSummary {
	sm := ss.sum
	if sm.Title == "" && ss.firstUserText != "" {
		t := ss.firstUserText
		if i := strings.IndexByte(t, '\n'); i >= 0 {
			t = t[:i]
		}
		if r := []rune(t); len(r) > 80 {
			t = string(r[:80]) + "…"
		}
		sm.Title = t
	}
	return sm
}

func (s *Store) get(id string) (*session, error) {
	ss := s.sessions[id]
	if ss == nil {
		return nil, core.Errorf(core.CodeNotFound, "no session %q", id)
	}
	return ss, nil
}

// ListSessions implements web.SessionSource.
func (s *Store) ListSessions(ctx context.Context, q web.ListQuery) ([]web.SessionSummary, error) {
	s.mu.RLock()
	out := make([]web.SessionSummary, 0, len(s.sessions))
	needle := strings.ToLower(q.Query)
	for _, ss := range s.sessions {
		sm := ss.summary()
		if needle != "" && !strings.Contains(strings.ToLower(sm.Title), needle) && !strings.Contains(strings.ToLower(sm.ID), needle) {
			continue
		}
		out = append(out, sm)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b web.SessionSummary) int {
		if a.UpdatedAt != b.UpdatedAt {
			if a.UpdatedAt > b.UpdatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// Summary implements web.SessionSource.
func (s *Store) Summary(ctx context.Context, id string) (web.SessionSummary, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ss, err := s.get(id)
	if err != nil {
		return web.SessionSummary{}, err
	}
	return ss.summary(), nil
}

// LoadSession implements web.SessionSource.
func (s *Store) LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ss, err := s.get(id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	return ss.h, slices.Clone(ss.events), nil
}

// EventsAfter implements web.SessionSource.
func (s *Store) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ss, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if after+1 >= int64(len(ss.events)) {
		return nil, nil
	}
	return slices.Clone(ss.events[max(after+1, 0):]), nil
}

// EventsUpTo implements web.SessionSource.
func (s *Store) EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ss, err := s.get(id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	n := min(upTo+1, int64(len(ss.events)))
	return ss.h, slices.Clone(ss.events[:max(n, 0)]), nil
}

// Import implements web.Importer for prism JSONL: a header line
// {"type":"session",…} then one event per line, seqs from 0.
func (s *Store) Import(ctx context.Context, filename string, r io.Reader) ([]string, error) {
	if strings.HasSuffix(filename, ".zip") || strings.HasSuffix(filename, ".zstd") || strings.HasSuffix(filename, ".zst") {
		return nil, core.Errorf(core.CodeInvalid, "the in-memory store imports prism JSONL only, not %q", filename)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var h core.SessionHeader
	var events []core.Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if line == 1 {
			var head struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(b, &head); err != nil || head.Type != "session" {
				return nil, core.Errorf(core.CodeInvalid, "line 1: want a session header {\"type\":\"session\",…}")
			}
			if err := json.Unmarshal(b, &h); err != nil || h.ID == "" {
				return nil, core.Errorf(core.CodeInvalid, "line 1: bad session header: %v", err)
			}
			continue
		}
		var e core.Event
		if err := e.UnmarshalJSON(b); err != nil {
			return nil, core.Errorf(core.CodeInvalid, "line %d: %v", line, err)
		}
		if e.Seq != int64(len(events)) {
			return nil, core.Errorf(core.CodeInvalid, "line %d: seq %d, want %d", line, e.Seq, len(events))
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, core.Errorf(core.CodeInvalid, "read %s: %v", filename, err)
	}
	if line == 0 {
		return nil, core.Errorf(core.CodeInvalid, "%s is empty", filename)
	}
	if err := s.CreateSession(ctx, h); err != nil {
		return nil, err
	}
	if len(events) > 0 {
		if err := s.AppendEvents(ctx, h.ID, events); err != nil {
			return nil, fmt.Errorf("import %s: %w", filename, err)
		}
	}
	return []string{h.ID}, nil
}
