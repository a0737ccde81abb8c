package web

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"prism/core"
	"prism/views"
)

// Broker fans committed events out to page streams.
//
// Each session with at least one open stream has a hub: one goroutine that
// folds the session's committed events into a views.Timeline, renders each
// change once, formats it once as SSE patches, and hands the same bytes to
// every subscriber. Publish only queues, so a commit is never delayed by
// rendering, and a subscriber's queue is bounded: a subscriber that falls
// behind is told to resynchronize from the log instead of blocking anyone.
//
// The session list has one more hub that re-reads changed sessions'
// summaries, at most every Tuning.ListThrottle.
//
// The live path by file: broker.go holds the registry of hubs and the
// catch-up renders a stream makes from the log; hub.go one session's live
// fold and its subscribers' queues; listhub.go the session list's rows;
// sse.go the SSE bytes every frame is formatted into; stream.go the two
// stream handlers. Streamed chunks are coalesced by views.Coalescer's rule;
// beyond it, a hub sends at most one frame per Tuning.FrameInterval, and a
// catch-up from the log is one frame: both merge updates (views.Update.Merge),
// so a card changed many times is sent once, in its latest state.
type Broker struct {
	src  SessionSource
	p    views.Presenter
	tune Tuning
	log  *slog.Logger

	mu     sync.Mutex
	hubs   map[string]*hub
	closed bool
	list   *listHub

	// watches are the share streams waiting for a session's commits: they
	// render their own (scoped, redacted) frames from the log, so they are
	// only woken, never handed the hub's frames.
	watchMu sync.Mutex
	watches map[string]map[*watch]struct{}

	// reader is what a session's pages show their reader, the owner
	// (Server.ownerReader; nil: the zero Reader); set before the first
	// subscription.
	reader func(sessionID string) views.Reader
}

// watch wakes a share stream when its session's log changes.
type watch struct {
	wake     chan struct{} // signalled (without blocking) on every commit
	replaced atomic.Bool   // the log was replaced since the stream last looked
}

// watch registers a wake-up for session id's commits; call the returned
// function to stop it.
func (b *Broker) watch(id string) (*watch, func()) {
	w := &watch{wake: make(chan struct{}, 1)}
	b.watchMu.Lock()
	if b.watches == nil {
		b.watches = map[string]map[*watch]struct{}{}
	}
	if b.watches[id] == nil {
		b.watches[id] = map[*watch]struct{}{}
	}
	b.watches[id][w] = struct{}{}
	b.watchMu.Unlock()
	return w, func() {
		b.watchMu.Lock()
		delete(b.watches[id], w)
		if len(b.watches[id]) == 0 {
			delete(b.watches, id)
		}
		b.watchMu.Unlock()
	}
}

func (b *Broker) wakeWatches(id string, replaced bool) {
	b.watchMu.Lock()
	defer b.watchMu.Unlock()
	for w := range b.watches[id] {
		if replaced {
			w.replaced.Store(true)
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// timeline returns an empty fold of session h as its pages render it.
func (b *Broker) timeline(h core.SessionHeader) *views.Timeline {
	t := views.NewTimeline(h, b.p)
	if b.reader != nil {
		t.SetReader(b.reader(h.ID))
	}
	return t
}

// fold returns the fold of a session's log as its pages render it.
func (b *Broker) fold(h core.SessionHeader, events []core.Event) *views.Timeline {
	t := b.timeline(h)
	t.ApplyAll(events)
	return t
}

func newBroker(src SessionSource, p views.Presenter, tune Tuning, log *slog.Logger) *Broker {
	b := &Broker{src: src, p: p, tune: tune, log: log, hubs: map[string]*hub{}}
	b.list = &listHub{b: b, subs: map[*listSub]struct{}{}, dirty: map[string]bool{}, done: make(chan struct{}),
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
	return b
}

// Publish hands committed events of one session to the live path. It is
// what a CommitFeed calls after each commit; it never blocks on
// subscribers and never renders on the caller's goroutine.
func (b *Broker) Publish(sessionID string, events []core.Event) {
	b.mu.Lock()
	h := b.hubs[sessionID]
	b.mu.Unlock()
	if h != nil && len(events) > 0 {
		h.enqueue(events)
	}
	if len(events) > 0 {
		b.wakeWatches(sessionID, false)
	}
	b.list.touch(sessionID)
}

// Replace tells the live path that a session's whole log was replaced (what
// a CommitFeed's OnReplace calls). The session's hub drops what it folded
// and queued, reloads the log from the source, and sends every subscriber
// the page re-rendered from it; later events continue the new log.
func (b *Broker) Replace(sessionID string) {
	b.mu.Lock()
	h := b.hubs[sessionID]
	b.mu.Unlock()
	if h != nil {
		h.replaced()
	}
	b.wakeWatches(sessionID, true)
	b.list.touch(sessionID)
}

// Close stops every hub and the list hub; open streams end (each watches
// its hub) after reporting it in the page's #stream-status.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	hubs := b.hubs
	b.hubs = map[string]*hub{}
	b.mu.Unlock()
	for _, h := range hubs {
		h.cancel()
	}
	b.list.close()
}

// frame is one formatted patch group covering the events (from-1, seq] of
// the log's generation gen. A reset frame re-renders the page from the
// generation's log up to seq, whatever the page showed before.
type frame struct {
	from, seq int64
	gen       int
	reset     bool
	data      []byte
}

// subscribe joins (or starts) the session's hub. It returns the
// subscription and the seq its first frame follows.
func (b *Broker) subscribe(ctx context.Context, id string) (*hub, *subscriber, int64, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, nil, 0, core.Errorf(core.CodeUnavailable, "server is shutting down")
	}
	h := b.hubs[id]
	if h == nil {
		hctx, cancel := context.WithCancel(context.Background())
		h = &hub{b: b, id: id, ctx: hctx, cancel: cancel, ready: make(chan struct{}),
			subs: map[*subscriber]struct{}{}, wake: make(chan struct{}, 1), flushed: -1}
		b.hubs[id] = h
		go h.run()
	}
	h.refs++
	b.mu.Unlock()
	select {
	case <-h.ready:
	case <-ctx.Done():
		b.release(h)
		return nil, nil, 0, ctx.Err()
	}
	if h.loadErr != nil {
		b.release(h)
		return nil, nil, 0, h.loadErr
	}
	s := &subscriber{ch: make(chan frame, b.tune.Buffer), kick: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	at := h.flushed
	s.gen = h.gen
	h.mu.Unlock()
	return h, s, at, nil
}

func (b *Broker) unsubscribe(h *hub, s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
	b.release(h)
}

// release drops one reference; the last one stops the hub.
func (b *Broker) release(h *hub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		if b.hubs[h.id] == h {
			delete(b.hubs, h.id)
		}
		h.cancel()
	}
}

// renderRange renders, from the log, the frame that brings a page showing
// the session up to seq after to seq upTo — what a reconnecting or lagging
// stream sends before it goes live. However many events the range holds,
// it is one frame carrying the latest state of each node they changed (the
// updates merged, as the hub merges a burst), not every intermediate
// state: a client that fell behind catches up at the cost of what changed,
// not of how often. A range that changes nothing visible is its id alone,
// so the client's Last-Event-ID still reaches upTo.
func (b *Broker) renderRange(ctx context.Context, id string, after, upTo int64) ([]frame, error) {
	if upTo <= after {
		return nil, nil
	}
	hdr, events, err := b.src.EventsUpTo(ctx, id, upTo)
	if err != nil {
		return nil, err
	}
	tl := b.timeline(hdr)
	var merged *views.Update
	for i := range events {
		e := &events[i]
		if e.Seq > upTo {
			break
		}
		u := tl.Apply(e)
		switch {
		case e.Seq <= after:
		case merged == nil:
			merged = &u
		default:
			merged.Merge(u)
		}
	}
	if merged == nil || merged.Empty() {
		return []frame{{from: after + 1, seq: upTo, data: idOnly(upTo)}}, nil
	}
	merged.Seq = upTo
	data, err := renderFrame(ctx, tl, *merged)
	if err != nil {
		return nil, err
	}
	return []frame{{from: after + 1, seq: upTo, data: data}}, nil
}

// renderPageAt renders, from the log up to seq upTo, the reset frame that
// brings a page to that point whatever it showed — what a stream sends when
// the log was replaced while it was lagging.
func (b *Broker) renderPageAt(ctx context.Context, id string, upTo int64) ([]byte, error) {
	hdr, events, err := b.src.EventsUpTo(ctx, id, upTo)
	if err != nil {
		return nil, err
	}
	return renderPage(ctx, b.fold(hdr, events), b.tune.Window, upTo)
}
