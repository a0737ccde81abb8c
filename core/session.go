package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"prism/core/logkey"
)

// Session is one session's log in memory, appending through an optional
// EventStore. It is dsh's Session: seq is contiguous from 0, every append is
// validated (lossless data, legacy vocabulary, surface rules) before it is
// stored, and the model transcript is derived from the surface.
//
// A Session is safe for concurrent use. Appends are serialized: seq
// assignment, validation and the store commit happen under one lock, so seqs
// stay contiguous; observers run after that lock is released, one event at a
// time in seq order (see OnAppend).
type Session struct {
	header SessionHeader
	store  EventStore
	now    func() time.Time
	logger *slog.Logger

	// appendMu serializes appends (seq assignment, validation, store
	// commit). Only its holder writes log and surf, under mu as well, so the
	// holder may read them without mu.
	appendMu sync.Mutex

	mu   sync.RWMutex // guards log and surf for readers
	log  []Event
	surf surface

	pubMu     sync.Mutex  // guards the fields below
	observers []*observer // copy-on-write
	queue     []Event     // committed events not yet delivered, in seq order
	draining  bool        // a goroutine is delivering the queue

	cacheMu      sync.Mutex // guards the derived-message cache
	derived      []Message
	derivedNodes int // surface nodes projected into derived
	derivedGen   int // surface replace generation derived was built under
}

type observer struct{ f func(Event) }

// SessionOptions configures a Session.
type SessionOptions struct {
	// Store is the durable log appends go through; nil keeps the session
	// purely in memory.
	Store EventStore
	// Now is the clock of event times (stored as epoch milliseconds); nil
	// means time.Now.
	Now func() time.Time
	// Logger receives contained observer panics; nil means slog.Default().
	Logger *slog.Logger
}

// AppendOptions carries an event's envelope metadata.
type AppendOptions struct {
	// SurfaceOp is required on surface types (user/message,
	// assistant/message, tool/result) and refused on every other type.
	SurfaceOp *SurfaceOp
	// SourceEventSeqs lists earlier events this one derives from; surface
	// types only. nil means absent; an empty non-nil slice is written as []
	// (allowed only on assistant/message).
	SourceEventSeqs []int64
	// Ignorable marks the event as skippable by a reader that does not know
	// its type.
	Ignorable bool
}

func newSession(h SessionHeader, opts SessionOptions) *Session {
	s := &Session{header: cloneHeader(h), store: opts.Store, now: opts.Now, logger: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	return s
}

// NewSession starts an empty session. An empty h.ID is filled with NewID()
// and a zero h.CreatedAt with the current time; the header is then validated
// (version SessionFormatVersion, createdAt a non-negative safe integer, cwd
// absolute when set, …) and, when a store is set, recorded with
// Store.CreateSession.
func NewSession(ctx context.Context, h SessionHeader, opts SessionOptions) (*Session, error) {
	s := newSession(h, opts)
	if s.header.ID == "" {
		s.header.ID = NewID()
	}
	if s.header.CreatedAt == 0 {
		s.header.CreatedAt = s.now().UnixMilli()
	}
	if err := validateHeader(s.header); err != nil {
		return nil, err
	}
	if s.store != nil {
		if err := s.store.CreateSession(ctx, cloneHeader(s.header)); err != nil {
			return nil, wrapCoded(err, "create session %q", s.header.ID)
		}
	}
	return s, nil
}

// OpenSession resumes a stored log: it validates h and events with
// ValidateLog and rebuilds the session from a copy of them, so appends
// continue at seq len(events). It writes nothing to the store; whether to
// close an interrupted turn (RepairInterrupted) or to mark the end of the
// seed with session/end-seed is the caller's choice.
func OpenSession(h SessionHeader, events []Event, opts SessionOptions) (*Session, error) {
	if err := ValidateLog(h, events); err != nil {
		return nil, Errorf(CodeInvalid, "open session %q: %w", h.ID, err)
	}
	s := newSession(h, opts)
	s.log = make([]Event, len(events))
	for i := range events {
		s.log[i] = cloneEvent(events[i])
	}
	s.surf = foldSurface(s.log)
	return s, nil
}

// Header returns the session's header.
func (s *Session) Header() SessionHeader { return cloneHeader(s.header) }

// NextSeq returns the seq the next appended event will get: the log length.
func (s *Session) NextSeq() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return int64(len(s.log))
}

// Events returns the log in seq order. The slice is a snapshot that later
// appends do not grow; callers must not mutate it or the events' data.
func (s *Session) Events() []Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log[:len(s.log):len(s.log)]
}

// OnAppend registers f to observe every event appended from now on. f runs
// after the event is committed, outside the session's append lock, for one
// event at a time in seq order: the first appending goroutine that finds no
// delivery running delivers every queued event, so an Append may return
// before its event's observers ran when another goroutine delivers it. f
// may append to the same session (that event is delivered after f
// returns). A panic in f is logged and contained. The returned function
// removes f; calling it more than once is harmless.
func (s *Session) OnAppend(f func(Event)) (remove func()) {
	if f == nil {
		return func() {}
	}
	o := &observer{f: f}
	s.pubMu.Lock()
	s.observers = append(slices.Clip(s.observers), o)
	s.pubMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.pubMu.Lock()
			s.observers = slices.DeleteFunc(slices.Clone(s.observers), func(x *observer) bool { return x == o })
			s.pubMu.Unlock()
		})
	}
}

// Append validates one event, durably stores it through the store (it
// returns only after the commit) and then adds it to the log, advancing seq.
// data may be any Go value, encoded with Snapshot, or a json.RawMessage,
// kept as its compact form.
//
// Validation follows dsh's Session.append, in order: data must be lossless
// JSON (else `session event "<type>" carries non-JSON-serializable data`,
// wrapping the cause); the legacy request/header-delta type and the
// request/header reason "fallback" are refused; request/header and message events
// must be well formed as a seed requires (see ValidateLog); and the surface
// rules hold: only surface types carry surfaceOp and sourceEventSeqs and
// they must carry surfaceOp; sourceEventSeqs are unique, non-negative, below
// the event's seq and non-empty except on assistant/message; a replacement
// names current surface nodes in order and cites every node it shadows; a
// tool/result replacement rewrites exactly one current tool/result and
// changes only message.content[0].content.
//
// Validation errors are *Error with CodeInvalid. A store error is returned
// as a *Error keeping the store's code (a seq conflict stays CodeConflict)
// and wrapping it. A rejected or failed append leaves nothing behind and
// does not advance seq. Relations between turns, steps and calls are not
// checked here (see CheckRelations). An event of a type this build does not
// know is stored verbatim.
func (s *Session) Append(ctx context.Context, typ string, data any, opts AppendOptions) (Event, error) {
	if typ == "" {
		return Event{}, Errorf(CodeInvalid, "session event type must be a non-empty string")
	}
	raw, err := snapshotEventData(data)
	if err != nil {
		return Event{}, &Error{Name: "Error", Code: CodeInvalid,
			Message: fmt.Sprintf("session event %q carries non-JSON-serializable data", typ), Err: err}
	}
	subject := fmt.Sprintf("session event %q", typ)
	if err := checkSupportedRequestHeader(typ, raw, subject); err != nil {
		return Event{}, Errorf(CodeInvalid, "%w", err)
	}
	if err := checkEventShape(typ, raw, subject); err != nil {
		return Event{}, Errorf(CodeInvalid, "%w", err)
	}
	ev := Event{Type: typ, Data: raw, Ignorable: opts.Ignorable, SourceEventSeqs: slices.Clone(opts.SourceEventSeqs)}
	if opts.SurfaceOp != nil {
		op := *opts.SurfaceOp
		ev.SurfaceOp = &op
	}
	committed, err := s.commit(ctx, func(log []Event) ([]Event, error) {
		ev.Seq = int64(len(log))
		ev.Time = s.now().UnixMilli()
		return []Event{ev}, nil
	})
	if err != nil {
		return Event{}, err
	}
	s.deliver()
	return committed[0], nil
}

// RepairInterrupted closes an interrupted last turn: it appends the events
// of InterruptedTurnClosers (with their own seqs and times) in one store
// batch and returns them; it returns nil when the last turn is closed.
func (s *Session) RepairInterrupted(ctx context.Context) ([]Event, error) {
	committed, err := s.commit(ctx, func(log []Event) ([]Event, error) {
		return InterruptedTurnClosers(log), nil
	})
	if err != nil {
		return nil, err
	}
	s.deliver()
	return committed, nil
}

// commit runs build under the append lock to produce the next events,
// validates their surface transitions, stores them and adds them to the log.
func (s *Session) commit(ctx context.Context, build func(log []Event) ([]Event, error)) ([]Event, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	evs, err := build(s.log)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	// The scratch surface shares nodes with s.surf: an append only writes
	// past the committed length, a replace copies, so readers are unaffected
	// until the scratch is installed.
	scratch := s.surf
	for i := range evs {
		log := s.log
		if i > 0 { // a batch (crash repair): plan against the earlier ones too
			log = append(s.log[:len(s.log):len(s.log)], evs[:i]...)
		}
		p, err := scratch.plan(&evs[i], log)
		if err != nil {
			return nil, Errorf(CodeInvalid, "%w", err)
		}
		scratch.apply(p)
	}
	if s.store != nil {
		if err := s.store.AppendEvents(ctx, s.header.ID, evs); err != nil {
			return nil, wrapCoded(err, "session %q: store %s at seq %d", s.header.ID, evs[0].Type, evs[0].Seq)
		}
	}
	s.mu.Lock()
	s.log = append(s.log, evs...)
	s.surf = scratch
	s.mu.Unlock()
	s.pubMu.Lock() // still under appendMu: the queue stays in seq order
	if len(s.observers) > 0 {
		s.queue = append(s.queue, evs...)
	}
	s.pubMu.Unlock()
	return evs, nil
}

// deliver runs the observers of queued events in seq order, unless
// another goroutine is already doing so (it then delivers these too).
func (s *Session) deliver() {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.draining {
		return
	}
	s.draining = true
	for len(s.queue) > 0 {
		ev := s.queue[0]
		s.queue = s.queue[1:]
		obs := s.observers
		s.pubMu.Unlock()
		for _, o := range obs {
			s.notify(o.f, ev)
		}
		s.pubMu.Lock()
	}
	s.queue = nil
	s.draining = false
}

// notify calls one observer, containing its panic.
func (s *Session) notify(f func(Event), ev Event) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Warn("session observer panicked",
				logkey.SessionID, s.header.ID, logkey.Seq, ev.Seq, logkey.Type, ev.Type, logkey.Panic, r)
		}
	}()
	f(ev)
}

// DeriveMessages returns the model transcript (see the package function
// DeriveMessages). Each surface node is projected once and cached; a surface
// replacement rebuilds the cache. The returned slice is fresh; the messages
// share their content blocks with the cache and must not be mutated.
func (s *Session) DeriveMessages() []Message {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	s.mu.RLock()
	nodes, gen, log := s.surf.nodes, s.surf.gen, s.log
	s.mu.RUnlock()
	if gen != s.derivedGen {
		s.derived, s.derivedNodes, s.derivedGen = nil, 0, gen
	}
	for _, seq := range nodes[s.derivedNodes:] {
		if m, ok := deriveEventMessage(&log[seq]); ok {
			s.derived = append(s.derived, m)
		}
	}
	s.derivedNodes = len(nodes)
	return slices.Clone(s.derived)
}

// snapshotEventData encodes event data losslessly, detaching a raw message
// from the caller's buffer.
func snapshotEventData(data any) (json.RawMessage, error) {
	raw, err := Snapshot(data)
	if err != nil {
		return nil, err
	}
	if _, isRaw := data.(json.RawMessage); isRaw {
		raw = bytes.Clone(raw)
	}
	return raw, nil
}

// wrapCoded wraps err with context as a *Error that keeps err's code
// (CodeInternal when err carries none).
func wrapCoded(err error, format string, args ...any) *Error {
	return &Error{Name: "Error", Code: ErrorCode(err), Message: fmt.Sprintf(format, args...) + ": " + err.Error(), Err: err}
}

func cloneHeader(h SessionHeader) SessionHeader {
	if h.SeedLength != nil {
		n := *h.SeedLength
		h.SeedLength = &n
	}
	if h.DelegationDepth != nil {
		n := *h.DelegationDepth
		h.DelegationDepth = &n
	}
	return h
}

func cloneEvent(e Event) Event {
	e.Data = bytes.Clone(e.Data)
	e.SourceEventSeqs = slices.Clone(e.SourceEventSeqs)
	if e.SurfaceOp != nil {
		op := *e.SurfaceOp
		e.SurfaceOp = &op
	}
	return e
}
