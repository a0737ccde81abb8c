package web

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/starfederation/datastar-go/datastar"

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
type Broker struct {
	src  SessionSource
	p    views.Presenter
	tune Tuning
	log  *slog.Logger

	mu     sync.Mutex
	hubs   map[string]*hub
	closed bool
	list   *listHub
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

// subscriber is one stream's queue on a hub.
type subscriber struct {
	ch     chan frame
	kick   chan struct{} // signalled when frames were dropped
	lagged bool          // guarded by hub.mu
	// gen is the log generation the stream's cursor counts in; it is
	// owned by the stream's goroutine once subscribe returns.
	gen int
}

// hub is the live fold of one session.
type hub struct {
	b      *Broker
	id     string
	ctx    context.Context
	cancel context.CancelFunc
	refs   int // guarded by Broker.mu

	ready   chan struct{}
	loadErr error

	mu      sync.Mutex
	queue   []core.Event
	replace bool // the log was replaced: reload it before taking queue
	subs    map[*subscriber]struct{}
	flushed int64 // seq covered by the last frame group handed out
	gen     int   // incremented each time the log is replaced
	err     error // why the hub stopped, when it failed
	wake    chan struct{}

	// Owned by the run goroutine.
	tl   *views.Timeline
	coal *views.Update
}

func (h *hub) enqueue(events []core.Event) {
	h.mu.Lock()
	h.queue = append(h.queue, events...)
	h.mu.Unlock()
	h.signal()
}

// replaced drops the queued events (they continue the old log) and has the
// run goroutine reload the log before it takes what is published next.
func (h *hub) replaced() {
	h.mu.Lock()
	h.queue = nil
	h.replace = true
	h.mu.Unlock()
	h.signal()
}

func (h *hub) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// stop ends the hub because it cannot go on (err); its streams report err
// and end, and the next stream of the session starts a new hub.
func (h *hub) stop(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
	h.b.mu.Lock()
	if h.b.hubs[h.id] == h {
		delete(h.b.hubs, h.id)
	}
	h.b.mu.Unlock()
	h.cancel()
}

// stopErr returns why the hub stopped (nil when the broker closed).
func (h *hub) stopErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
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

// resync clears s's queue and lag and returns the seq the next frame will
// follow and the log generation it counts in: the subscriber renders
// everything after its cursor up to it from the log — the whole page when
// the generation is not its own (the log was replaced meanwhile).
func (h *hub) resync(s *subscriber) (int64, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		select {
		case <-s.ch:
			continue
		case <-s.kick:
			continue
		default:
		}
		break
	}
	s.lagged = false
	return h.flushed, h.gen
}

func (h *hub) run() {
	hdr, events, err := h.b.src.LoadSession(h.ctx, h.id)
	if err != nil {
		h.loadErr = err
		close(h.ready)
		return
	}
	h.tl = views.Fold(hdr, events, h.b.p)
	h.mu.Lock()
	h.flushed = h.tl.LastSeq()
	h.mu.Unlock()
	close(h.ready)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	defer timer.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
			armed = false
			h.flushCoalesced()
		}
		h.mu.Lock()
		q, replace := h.queue, h.replace
		h.queue, h.replace = nil, false
		h.mu.Unlock()
		if replace && !h.reload() {
			return
		}
		for i := range q {
			h.take(&q[i])
		}
		if h.coal != nil && !armed {
			timer.Reset(h.b.tune.Coalesce)
			armed = true
		}
		if h.coal == nil && armed {
			timer.Stop()
			armed = false
		}
	}
}

// reload folds the replaced log afresh and sends every subscriber the page
// rendered from it (a reset frame of the next generation). It stops the hub
// when the log cannot be read or rendered.
func (h *hub) reload() bool {
	hdr, events, err := h.b.src.LoadSession(h.ctx, h.id)
	if err == nil {
		h.coal = nil
		h.tl = views.Fold(hdr, events, h.b.p)
		var data []byte
		if data, err = renderPage(h.ctx, h.tl, h.b.tune.Window, h.tl.LastSeq()); err == nil {
			h.mu.Lock()
			h.gen++
			h.flushed = h.tl.LastSeq()
			h.broadcast(frame{seq: h.flushed, gen: h.gen, reset: true, data: data})
			h.mu.Unlock()
			return true
		}
	}
	if h.ctx.Err() == nil {
		h.b.log.Error("live fold: replaced log not reloaded", "session_id", h.id, "err", err)
		h.stop(err)
	}
	return false
}

// take applies one published event, repairing a gap from the log first.
func (h *hub) take(e *core.Event) {
	last := h.tl.LastSeq()
	if e.Seq <= last {
		return // already folded (the load raced the publish)
	}
	if e.Seq > last+1 {
		missing, err := h.b.src.EventsAfter(h.ctx, h.id, last)
		if err != nil {
			h.b.log.Warn("live fold: gap not repaired", "session_id", h.id, "after", last, "err", err)
		}
		for i := range missing {
			if missing[i].Seq >= e.Seq {
				break
			}
			h.apply(&missing[i])
		}
	}
	h.apply(e)
}

func (h *hub) apply(e *core.Event) {
	if e.Type == core.EventAssistantChunk {
		u := h.tl.Apply(e)
		if h.coal == nil {
			h.coal = &u
		} else {
			h.coal.Merge(u)
		}
		return
	}
	h.flushCoalesced()
	h.emit(h.tl.Apply(e))
}

func (h *hub) flushCoalesced() {
	if h.coal == nil {
		return
	}
	u := *h.coal
	h.coal = nil
	h.emit(u)
}

// emit renders an update once and queues it for every subscriber. An
// update that changes nothing on the page (usage, finish, tool-call
// deltas…) is still a frame: its SSE id alone, so every cursor, and the
// client's Last-Event-ID, moves past it.
func (h *hub) emit(u views.Update) {
	var data []byte
	if u.Empty() {
		data = idOnly(u.Seq)
	} else {
		var err error
		data, err = renderFrame(h.ctx, h.tl, u)
		if err != nil {
			// No frame: subscribers see the gap and re-render it from
			// the log, which reports the failure in their streams.
			h.b.log.Error("live fold: render failed", "session_id", h.id, "seq", u.Seq, "err", err)
			data = nil
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f := frame{from: h.flushed + 1, seq: u.Seq, gen: h.gen, data: data}
	h.flushed = u.Seq
	if len(data) == 0 {
		return
	}
	h.broadcast(f)
}

// broadcast queues f for every subscriber that is not lagging; a full
// queue makes its subscriber lag and kicks it. h.mu is held.
func (h *hub) broadcast(f frame) {
	for s := range h.subs {
		if s.lagged {
			continue
		}
		select {
		case s.ch <- f:
		default:
			s.lagged = true
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
}

// renderRange renders, from the log, the frames that bring a page showing
// the session up to seq after to seq upTo — what a reconnecting or lagging
// stream sends before it goes live.
func (b *Broker) renderRange(ctx context.Context, id string, after, upTo int64) ([]frame, error) {
	if upTo <= after {
		return nil, nil
	}
	hdr, events, err := b.src.EventsUpTo(ctx, id, upTo)
	if err != nil {
		return nil, err
	}
	tl := views.NewTimeline(hdr, b.p)
	var frames []frame
	prev := after
	var coal *views.Update
	push := func(u views.Update) error {
		if u.Empty() {
			return nil
		}
		data, err := renderFrame(ctx, tl, u)
		if err != nil {
			return err
		}
		frames = append(frames, frame{from: prev + 1, seq: u.Seq, data: data})
		prev = u.Seq
		return nil
	}
	for i := range events {
		e := &events[i]
		if e.Seq > upTo {
			break
		}
		if e.Seq <= after {
			tl.Apply(e)
			continue
		}
		if e.Type == core.EventAssistantChunk {
			u := tl.Apply(e)
			if coal == nil {
				coal = &u
			} else {
				coal.Merge(u)
			}
			continue
		}
		if coal != nil {
			if err := push(*coal); err != nil {
				return nil, err
			}
			coal = nil
		}
		if err := push(tl.Apply(e)); err != nil {
			return nil, err
		}
	}
	if coal != nil {
		if err := push(*coal); err != nil {
			return nil, err
		}
	}
	if prev < upTo {
		// The tail rendered nothing: the id alone brings the client's
		// Last-Event-ID to upTo.
		frames = append(frames, frame{from: prev + 1, seq: upTo, data: idOnly(upTo)})
	}
	return frames, nil
}

// idOnly is an SSE event with an id and no data: the client records the id
// as its Last-Event-ID and dispatches nothing.
func idOnly(seq int64) []byte {
	return []byte("id: " + strconv.FormatInt(seq, 10) + "\n\n")
}

// renderPageAt renders, from the log up to seq upTo, the reset frame that
// brings a page to that point whatever it showed — what a stream sends when
// the log was replaced while it was lagging.
func (b *Broker) renderPageAt(ctx context.Context, id string, upTo int64) ([]byte, error) {
	hdr, events, err := b.src.EventsUpTo(ctx, id, upTo)
	if err != nil {
		return nil, err
	}
	return renderPage(ctx, views.Fold(hdr, events, b.p), b.tune.Window, upTo)
}

// renderPage formats the page's header and transcript window of tl as one
// morph whose event id is seq.
func renderPage(ctx context.Context, tl *views.Timeline, window int, seq int64) ([]byte, error) {
	patches, err := views.RenderPage(ctx, tl, window)
	if err != nil {
		return nil, err
	}
	return formatPatches(patches, strconv.FormatInt(seq, 10)), nil
}

// renderFrame formats an update as SSE datastar-patch-elements events; the
// last carries the update's seq as its event id, so a reconnecting client
// resumes after it.
func renderFrame(ctx context.Context, tl *views.Timeline, u views.Update) ([]byte, error) {
	patches, err := views.RenderUpdate(ctx, tl, u)
	if err != nil {
		return nil, err
	}
	return formatPatches(patches, strconv.FormatInt(u.Seq, 10)), nil
}

// formatPatches formats patches with datastar-go, once, into bytes that can
// be written to any number of streams. Every stream's patches go through it:
// it makes each patch's text safe for SSE data lines (sseSafe, sseLine).
func formatPatches(patches []views.Patch, id string) []byte {
	w := &bufWriter{h: http.Header{}}
	sse := datastar.NewSSE(w, formatRequest)
	for i, p := range patches {
		var opts []datastar.PatchElementOption
		if p.Selector != "" {
			opts = append(opts, datastar.WithSelector(sseLine(p.Selector)))
		}
		if p.Mode == "append" {
			opts = append(opts, datastar.WithModeAppend())
		} else if p.Mode == "prepend" {
			opts = append(opts, datastar.WithModePrepend())
		}
		if i == len(patches)-1 && id != "" {
			opts = append(opts, datastar.WithPatchElementsEventID(id))
		}
		_ = sse.PatchElements(sseSafe(p.HTML), opts...) // writes to memory; cannot fail
	}
	return w.buf.Bytes()
}

// sseSafe makes text safe to carry in SSE data lines. datastar-go splits
// elements on LF only, but the client (like EventSource) also ends a line
// at a CR, so a CR that reached a patch would end its data line and start a
// field of its own ("\rdata: mode remove"). CRLF and CR become LF — what an
// HTML parser makes of them anyway, so the patched DOM is unchanged — and
// the other C0 controls except tab, and DEL, become U+FFFD. views cleans
// what it renders; this is the formatter's guarantee for every patch.
func sseSafe(s string) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			break
		}
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b.WriteByte('\n')
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			b.WriteString("\uFFFD")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sseLine makes a one-line field safe: datastar-go writes it as one data
// line, so a line break of any kind, like every other C0 control, becomes
// U+FFFD.
func sseLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
}

var formatRequest, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "/", nil)

// bufWriter is an in-memory http.ResponseWriter for formatting SSE bytes.
type bufWriter struct {
	h   http.Header
	buf bytes.Buffer
}

func (w *bufWriter) Header() http.Header         { return w.h }
func (w *bufWriter) Write(b []byte) (int, error) { return w.buf.Write(b) }
func (w *bufWriter) WriteHeader(int)             {}
func (w *bufWriter) Flush()                      {}

// listHub pushes session-list row changes. Flushes never overlap: a
// flush is armed only while none is armed or running, and a running flush
// re-arms itself for what changed meanwhile, so rows reach subscribers in
// the order their summaries were read.
type listHub struct {
	b     *Broker
	after func(time.Duration, func()) // time.AfterFunc; tests step it

	mu       sync.Mutex
	subs     map[*listSub]struct{}
	dirty    map[string]bool
	armed    bool // a flush is scheduled
	flushing bool // a flush is running
	stopped  bool
	done     chan struct{} // closed by close: list streams end
}

type listSub struct {
	ch   chan listFrame
	kick chan struct{}
}

// listFrame is one changed row, formatted both as a morph (the page shows
// the row) and as a prepend (it does not yet).
type listFrame struct {
	sum            SessionSummary
	morph, prepend []byte
}

func (l *listHub) touch(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) == 0 || l.stopped {
		return
	}
	l.dirty[id] = true
	l.armLocked()
}

// armLocked schedules a flush unless one is scheduled or running (the
// running one re-arms when it ends).
func (l *listHub) armLocked() {
	if l.armed || l.flushing || l.stopped || len(l.dirty) == 0 {
		return
	}
	l.armed = true
	l.after(l.b.tune.ListThrottle, l.flush)
}

func (l *listHub) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		close(l.done)
	}
}

func (l *listHub) flush() {
	l.mu.Lock()
	dirty := l.dirty
	l.dirty = map[string]bool{}
	l.armed, l.flushing = false, true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.flushing = false
		l.armLocked()
		l.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id := range dirty {
		sum, err := l.b.src.Summary(ctx, id)
		if err != nil {
			l.b.log.Debug("list: summary unavailable", "session_id", id, "err", err)
			continue
		}
		html, err := views.Render(ctx, views.SessionRow(rowView(&sum)))
		if err != nil {
			l.b.log.Error("list: render failed", "session_id", id, "err", err)
			continue
		}
		f := listFrame{
			sum:     sum,
			morph:   formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""),
			prepend: formatPatches([]views.Patch{{Selector: "#session-rows", Mode: "prepend", HTML: html}}, ""),
		}
		l.mu.Lock()
		for s := range l.subs {
			select {
			case s.ch <- f:
			default:
				select {
				case s.kick <- struct{}{}:
				default:
				}
			}
		}
		l.mu.Unlock()
	}
}

func (l *listHub) subscribe() *listSub {
	s := &listSub{ch: make(chan listFrame, l.b.tune.Buffer), kick: make(chan struct{}, 1)}
	l.mu.Lock()
	l.subs[s] = struct{}{}
	l.mu.Unlock()
	return s
}

func (l *listHub) unsubscribe(s *listSub) {
	l.mu.Lock()
	delete(l.subs, s)
	l.mu.Unlock()
}

// matches reports whether a summary matches a list query.
func matches(q string, s *SessionSummary) bool {
	if q == "" {
		return true
	}
	q = strings.ToLower(q)
	return strings.Contains(strings.ToLower(s.Title), q) || strings.Contains(strings.ToLower(s.ID), q)
}
