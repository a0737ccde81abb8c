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

// DefaultFlushDelay is how long an appended event may wait for a
// durability point (Sync) before the session commits it anyway.
const DefaultFlushDelay = 2 * time.Millisecond

// Session is one session's log in memory, appending through an optional
// EventStore. It is dsh's Session: seq is contiguous from 0, every append is
// validated (lossless data, legacy vocabulary, surface rules) before it is
// logged, and the model transcript is derived from the surface.
//
// # Durability points
//
// With a store, Append and AppendMany do not wait for the store: they
// validate, log the events in memory and queue them. Queued events are
// committed together (one EventStore.AppendEvents call, one transaction)
// when a caller reaches a durability point — Sync, or Flush without waiting
// — or at the latest FlushDelay after they were appended, so a live viewer
// never waits long for them. A caller that depends on an event outside the
// log (a tool body with side effects, an acknowledgement to a user) waits
// for it with Sync or WaitDurable first. Observers (OnAppend) only ever see
// committed events.
//
// A failed commit poisons the session: its log is cut back to the durable
// prefix and every later append, Sync and WaitDurable returns the store's
// error. Reopen the session from the store (OpenSession) to continue.
//
// A Session is safe for concurrent use. Appends are serialized: seq
// assignment and validation happen under one lock, so seqs stay contiguous;
// observers run outside that lock, one event at a time in seq order.
type Session struct {
	header     SessionHeader
	store      EventStore
	now        func() time.Time
	logger     *slog.Logger
	flushDelay time.Duration

	// appendMu serializes appends (seq assignment, validation) and the
	// rollback of a failed commit. Only its holder writes log and surf,
	// under mu as well, so the holder may read them without mu.
	appendMu sync.Mutex

	mu   sync.RWMutex // guards log and surf for readers
	log  []Event
	surf surface

	wmu       sync.Mutex    // guards the write-behind state below
	pending   []Event       // logged, not yet handed to the store, in seq order
	facts     []*EventFacts // pending's facts, as appended (nil: a decode tells)
	durable   int64         // length of the log's durable prefix
	queued    int64         // length of the log handed to the write-behind (durable ≤ queued)
	flushing  bool          // a goroutine is committing (at most one at a time)
	timer     *time.Timer   // commits pending events after flushDelay
	armed     bool          // timer is running
	failed    error         // the first failed commit; sticky
	committed chan struct{} // closed and replaced after each commit or failure

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
	// purely in memory (every append is then at once "durable").
	Store EventStore
	// Now is the clock of event times (stored as epoch milliseconds); nil
	// means time.Now.
	Now func() time.Time
	// Logger receives contained observer panics and failed commits; nil
	// means slog.Default().
	Logger *slog.Logger
	// FlushDelay bounds how long an appended event waits for a durability
	// point before it is committed anyway (0 = DefaultFlushDelay; negative:
	// commit at once, as a group commit with whatever else is queued).
	FlushDelay time.Duration
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

// Draft is one event of AppendMany: its type, its data (as for Append) and
// its envelope metadata.
type Draft struct {
	Type    string
	Data    any
	Options AppendOptions
}

func newSession(h SessionHeader, opts SessionOptions) *Session {
	s := &Session{header: cloneHeader(h), store: opts.Store, now: opts.Now, logger: opts.Logger,
		flushDelay: opts.FlushDelay, committed: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.flushDelay == 0 {
		s.flushDelay = DefaultFlushDelay
	}
	return s
}

// NewSession starts an empty session. An empty h.ID is filled with NewID()
// and a zero h.CreatedAt with the current time; the header is then validated
// (version SessionFormatVersion, createdAt a non-negative safe integer, cwd
// absolute when set, …) and, when a store is set, recorded with
// Store.CreateSession before NewSession returns.
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
// continue at seq len(events); the given events count as durable. It writes
// nothing to the store; whether to close an interrupted turn
// (RepairInterrupted) or to mark the end of the seed with
// session/end-seed is the caller's choice.
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
	s.durable = int64(len(s.log))
	s.queued = s.durable
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

// Events returns the log in seq order, including events not committed yet
// (see Durable). The slice is a snapshot that later appends do not grow;
// callers must not mutate it or the events' data.
func (s *Session) Events() []Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log[:len(s.log):len(s.log)]
}

// Durable returns the length of the log's durable prefix: events with a
// smaller seq are committed to the store (all of them without a store).
func (s *Session) Durable() int64 {
	if s.store == nil {
		return s.NextSeq()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.durable
}

// OnAppend registers f to observe every event committed from now on. f runs
// after the event is committed, outside the session's append lock, for one
// event at a time in seq order: whichever goroutine committed an event
// delivers it, unless a delivery is already running, which then delivers it
// too. f may append to the same session (that event is delivered after f
// returns, once it is committed) but must not wait for a commit (Sync,
// WaitDurable): it may be running on the goroutine that commits. A panic in
// f is logged and contained. The returned function removes f; calling it
// more than once is harmless.
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

// Append validates one event and adds it to the log, advancing seq; with a
// store it is queued for the next commit and Append returns without waiting
// for it (see the Session's durability points). data may be any Go value,
// encoded with Snapshot, or a json.RawMessage, kept as its compact form. ctx
// is accepted for symmetry with the store; an append never blocks on I/O,
// so it is not withdrawn when ctx ends.
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
// Validation errors are *Error with CodeInvalid; a rejected append leaves
// nothing behind and does not advance seq. After a failed commit every
// append returns that commit's error (a *Error keeping the store's code, so a
// seq conflict stays CodeConflict, and wrapping it). Relations between
// turns, steps and calls are not checked here (see CheckRelations). An
// event of a type this build does not know is stored verbatim.
func (s *Session) Append(ctx context.Context, typ string, data any, opts AppendOptions) (Event, error) {
	ev, f, err := prepareEvent(typ, data, opts)
	if err != nil {
		return Event{}, err
	}
	one, facts := [1]Event{ev}, [1]*EventFacts{f}
	if err := s.add(one[:], facts[:]); err != nil {
		return Event{}, err
	}
	return one[0], nil
}

// AppendMany appends drafts as consecutive events, all or none: one
// validation pass (each event as Append validates it, the surface rules
// against the earlier events of the batch too), one queue entry and one
// store transaction. It returns the logged events in order. A rejected batch
// leaves nothing behind; the error names the offending draft's type as
// Append's does.
func (s *Session) AppendMany(ctx context.Context, drafts ...Draft) ([]Event, error) {
	if len(drafts) == 0 {
		return nil, nil
	}
	evs := make([]Event, len(drafts))
	facts := make([]*EventFacts, len(drafts))
	for i, d := range drafts {
		ev, f, err := prepareEvent(d.Type, d.Data, d.Options)
		if err != nil {
			return nil, err
		}
		evs[i], facts[i] = ev, f
	}
	if err := s.add(evs, facts); err != nil {
		return nil, err
	}
	return evs, nil
}

// prepareEvent runs the checks of one event that do not depend on the log:
// type, lossless data, legacy vocabulary and message shape. It also
// returns the event's facts when data's type tells them (nil otherwise),
// for a CheckedStore.
func prepareEvent(typ string, data any, opts AppendOptions) (Event, *EventFacts, error) {
	if typ == "" {
		return Event{}, nil, Errorf(CodeInvalid, "session event type must be a non-empty string")
	}
	raw, err := snapshotEventData(data)
	if err != nil {
		return Event{}, nil, &Error{Name: "Error", Code: CodeInvalid,
			Message: fmt.Sprintf("session event %q carries non-JSON-serializable data", typ), Err: err}
	}
	if err := checkAppendShape(typ, data, raw); err != nil {
		return Event{}, nil, Errorf(CodeInvalid, "%w", err)
	}
	ev := Event{Type: typ, Data: raw, Ignorable: opts.Ignorable, SourceEventSeqs: slices.Clone(opts.SourceEventSeqs)}
	if opts.SurfaceOp != nil {
		op := *opts.SurfaceOp
		ev.SurfaceOp = &op
	}
	return ev, appendedFactsOf(typ, data), nil
}

// checkAppendShape runs checkSupportedRequestHeader and checkEventShape on
// an appended event, from its typed data where the type guarantees what the
// JSON check would find (a RequestHeader's reason, a message's shape), else
// from its encoding.
func checkAppendShape(typ string, data any, raw json.RawMessage) error {
	subject := func() string { return fmt.Sprintf("session event %q", typ) }
	if typ == "request/header-delta" || typ == EventRequestHeader {
		if err := checkSupportedRequestHeader(typ, raw, subject()); err != nil {
			return err
		}
	}
	if ok, err := checkTypedShape(typ, data, subject); ok {
		return err
	}
	switch typ {
	case EventRequestHeader, EventUserMessage, EventAssistantMessage, EventToolResult:
		return checkEventShape(typ, raw, subject())
	}
	return nil
}

// add logs evs (prepared by prepareEvent) under the append lock: it assigns
// their seqs and times, validates their surface transitions against the log
// and each other, and queues them for the store — or, without a store,
// delivers them to the observers at once.
func (s *Session) add(evs []Event, facts []*EventFacts) error {
	s.appendMu.Lock()
	return s.addLocked(evs, facts, true)
}

// addLocked is add with appendMu held, which it releases; stamp sets the
// events' times (else they keep theirs). facts parallels evs (nil: none
// known).
func (s *Session) addLocked(evs []Event, facts []*EventFacts, stamp bool) error {
	if err := s.failure(); err != nil {
		s.appendMu.Unlock()
		return err
	}
	// The scratch surface shares nodes with s.surf: an append only writes
	// past the committed length, a replace copies, so readers are unaffected
	// until the scratch is installed.
	scratch := s.surf
	next := int64(len(s.log))
	for i := range evs {
		evs[i].Seq = next + int64(i)
		if stamp {
			evs[i].Time = s.now().UnixMilli()
		}
		p, err := scratch.plan(&evs[i], logView{head: s.log, tail: evs[:i]}) // the batch's earlier events too
		if err != nil {
			s.appendMu.Unlock()
			return Errorf(CodeInvalid, "%w", err)
		}
		scratch.apply(p)
	}
	s.mu.Lock()
	s.log = append(s.log, evs...)
	s.surf = scratch
	s.mu.Unlock()
	if s.store == nil {
		s.publish(evs) // still under appendMu: the queue stays in seq order
		s.appendMu.Unlock()
		s.deliver()
		return nil
	}
	s.wmu.Lock()
	s.pending = append(s.pending, evs...)
	if facts == nil {
		facts = make([]*EventFacts, len(evs))
	}
	s.facts = append(s.facts, facts...)
	s.queued += int64(len(evs))
	switch {
	case s.flushing || s.armed:
	case s.flushDelay < 0:
		s.startFlush()
	case s.timer == nil:
		s.timer = time.AfterFunc(s.flushDelay, s.onTimer)
		s.armed = true
	default:
		s.timer.Reset(s.flushDelay)
		s.armed = true
	}
	s.wmu.Unlock()
	s.appendMu.Unlock()
	return nil
}

// failure returns the sticky commit failure, if any.
func (s *Session) failure() error {
	if s.store == nil {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.failed
}

// onTimer commits what waited FlushDelay for a durability point.
func (s *Session) onTimer() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.armed = false
	if !s.flushing && len(s.pending) > 0 {
		s.startFlush()
	}
}

// startFlush starts a committing goroutine; s.wmu is held.
func (s *Session) startFlush() {
	s.flushing = true
	go s.flushLoop(-1)
}

// Flush starts committing every queued event now, without waiting for the
// commit. It is a durability point for callers that wait with WaitDurable
// elsewhere.
func (s *Session) Flush() {
	if s.store == nil {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.disarm()
	if !s.flushing && len(s.pending) > 0 {
		s.startFlush()
	}
}

// disarm stops the flush timer; s.wmu is held.
func (s *Session) disarm() {
	if s.armed {
		s.timer.Stop()
		s.armed = false
	}
}

// Sync commits every event appended before it and waits for that commit
// (the calling goroutine commits itself when no commit is running). It
// returns the commit's failure, or ctx's error if ctx ends first (the
// commit still completes or fails on its own). It does not wait for the
// observers, which may still be running for the committed events.
func (s *Session) Sync(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	s.wmu.Lock()
	target := s.queued // pending, or in a commit that is running
	s.disarm()
	if s.failed == nil && !s.flushing && len(s.pending) > 0 {
		s.flushing = true
		s.wmu.Unlock()
		s.flushLoop(target)
		s.wmu.Lock()
	}
	s.wmu.Unlock()
	return s.waitDurable(ctx, target, true)
}

// WaitDurable waits until the event with seq is committed, without
// hastening its commit: that happens at the next Flush or Sync, or within
// FlushDelay. It returns the commit's failure (also when the event was
// lost with it) or ctx's error.
func (s *Session) WaitDurable(ctx context.Context, seq int64) error {
	if s.store == nil {
		return nil
	}
	return s.waitDurable(ctx, seq+1, false)
}

// waitDurable waits until the durable prefix holds n events. With kick, a
// commit that is still needed once the running one ends is started.
func (s *Session) waitDurable(ctx context.Context, n int64, kick bool) error {
	for {
		s.wmu.Lock()
		switch {
		case s.failed != nil:
			err := s.failed
			s.wmu.Unlock()
			return err
		case s.durable >= n:
			s.wmu.Unlock()
			return nil
		}
		if kick && !s.flushing && len(s.pending) > 0 {
			s.startFlush()
		}
		ch := s.committed
		s.wmu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// flushLoop commits queued events, one store call at a time, until none is
// queued — or, with target ≥ 0, until the durable prefix reaches target,
// handing any rest to a goroutine. The caller has set s.flushing.
func (s *Session) flushLoop(target int64) {
	for {
		s.wmu.Lock()
		if len(s.pending) == 0 || s.failed != nil {
			s.flushing = false
			s.wmu.Unlock()
			return
		}
		if target >= 0 && s.durable >= target {
			go s.flushLoop(-1) // still flushing: the rest rides the next commit
			s.wmu.Unlock()
			return
		}
		batch, facts := s.pending, s.facts
		s.pending, s.facts = nil, nil
		s.wmu.Unlock()

		var err error
		if cs, ok := s.store.(CheckedStore); ok {
			err = cs.AppendChecked(context.Background(), s.header.ID, batch, facts)
		} else {
			err = s.store.AppendEvents(context.Background(), s.header.ID, batch)
		}
		if err != nil {
			s.fail(wrapCoded(err, "session %q: store %s at seq %d", s.header.ID, batch[0].Type, batch[0].Seq))
			return
		}
		s.pubMu.Lock() // before the next commit can queue: seq order holds
		if len(s.observers) > 0 {
			s.queue = append(s.queue, batch...)
		}
		s.pubMu.Unlock()
		s.wmu.Lock()
		s.durable += int64(len(batch))
		close(s.committed)
		s.committed = make(chan struct{})
		s.wmu.Unlock()
		s.deliver()
	}
}

// fail records a failed commit: the log is cut back to its durable prefix,
// queued events are dropped and every waiter and later append gets err.
func (s *Session) fail(err *Error) {
	s.logger.Error("session commit failed; the session refuses further appends",
		logkey.SessionID, s.header.ID, logkey.Err, err)
	s.appendMu.Lock()
	s.wmu.Lock()
	s.failed = err
	s.pending, s.facts = nil, nil
	s.flushing = false
	s.disarm()
	close(s.committed)
	s.committed = make(chan struct{})
	durable := s.durable
	s.queued = durable
	s.wmu.Unlock()
	s.mu.Lock()
	s.log = s.log[:durable:durable]
	s.surf = foldSurface(s.log)
	s.mu.Unlock()
	s.appendMu.Unlock()
	s.cacheMu.Lock()
	s.derived, s.derivedNodes, s.derivedGen = nil, 0, s.surf.gen
	s.cacheMu.Unlock()
}

// RepairInterrupted closes an interrupted last turn: it appends the events
// of InterruptedTurnClosers (with their own times) as one batch, waits for
// their commit and returns them; it returns nil when the last turn is
// closed.
func (s *Session) RepairInterrupted(ctx context.Context) ([]Event, error) {
	s.appendMu.Lock()
	closers := InterruptedTurnClosers(s.log)
	if len(closers) == 0 {
		s.appendMu.Unlock()
		return nil, nil
	}
	if err := s.addLocked(closers, nil, false); err != nil {
		return nil, err
	}
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	return closers, nil
}

// publish queues committed events for the observers; the caller holds
// appendMu (no store) so the queue stays in seq order.
func (s *Session) publish(evs []Event) {
	s.pubMu.Lock()
	if len(s.observers) > 0 {
		s.queue = append(s.queue, evs...)
	}
	s.pubMu.Unlock()
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
// replacement rebuilds the cache. The returned slice shares the cache's
// backing array (later appends never write inside its length): callers must
// not mutate it or the messages' content blocks.
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
	return s.derived[:len(s.derived):len(s.derived)]
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
