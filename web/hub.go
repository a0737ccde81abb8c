package web

import (
	"context"
	"sync"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/views"
)

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
	tl *views.Timeline
	co views.Coalescer // chunk updates held until the Coalesce window closes
	// chunkDue is when the held chunk update is released (zero: none held).
	chunkDue time.Time
	// pending gathers the updates ready to send while the next frame is
	// not yet due (Tuning.FrameInterval after lastFrame): a burst becomes
	// one frame carrying the latest state of each changed node.
	pending   *views.Update
	lastFrame time.Time
	// interval is the current time between frames: Tuning.FrameInterval,
	// doubled (up to 8×) while subscribers still hold earlier frames when
	// a new one is queued, halved back as they keep up — a slow fan-out
	// makes the hub coalesce more, so lag stays bounded.
	interval time.Duration
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
		h.loadErr = sessionGone(err)
		close(h.ready)
		return
	}
	h.tl = h.b.fold(hdr, events)
	h.co.Off = h.b.tune.Coalesce < 0
	h.mu.Lock()
	h.flushed = h.tl.LastSeq()
	h.mu.Unlock()
	close(h.ready)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
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
		if next := h.release(time.Now()); !next.IsZero() {
			timer.Reset(time.Until(next))
		}
	}
}

// release sends what is due at now — the held chunk update once its
// Coalesce window closed, the pending updates once a frame is due — and
// returns when to look again (zero: nothing is waiting).
func (h *hub) release(now time.Time) time.Time {
	if h.co.Holding() {
		if h.chunkDue.IsZero() {
			h.chunkDue = now.Add(h.b.tune.Coalesce)
		}
		if !now.Before(h.chunkDue) {
			_ = h.co.Flush(h.collect)
		}
	}
	if !h.co.Holding() {
		h.chunkDue = time.Time{}
	}
	if h.interval == 0 {
		h.interval = h.b.tune.FrameInterval
	}
	frameDue := h.lastFrame.Add(h.interval)
	if h.pending != nil && !now.Before(frameDue) {
		h.send(now)
	}
	var next time.Time
	if h.pending != nil {
		next = frameDue
	}
	if !h.chunkDue.IsZero() && (next.IsZero() || h.chunkDue.Before(next)) {
		next = h.chunkDue
	}
	return next
}

// sessionGone is what a page following a session is told when the
// session's log is not found: it was deleted since the page loaded (the
// hub's reload after the delete, or a stream that subscribes, or catches
// up, just after it).
func sessionGone(err error) error {
	if core.ErrorCode(err) == core.CodeNotFound {
		return core.Errorf(core.CodeNotFound, "this session was deleted")
	}
	return err
}

// reload folds the replaced log afresh and sends every subscriber the page
// rendered from it (a reset frame of the next generation). It stops the hub
// when the log cannot be read or rendered.
func (h *hub) reload() bool {
	hdr, events, err := h.b.src.LoadSession(h.ctx, h.id)
	if err == nil {
		h.co.Reset()
		h.chunkDue, h.pending = time.Time{}, nil // the reset frame covers them
		h.tl = h.b.fold(hdr, events)
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
		if core.ErrorCode(err) == core.CodeNotFound {
			// Deleted: its pages are told the session is gone.
			h.b.log.Info("live fold: session deleted", logkey.SessionID, h.id)
			h.stop(sessionGone(err))
			return false
		}
		h.b.log.Error("live fold: replaced log not reloaded", logkey.SessionID, h.id, logkey.Err, err)
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
			h.b.log.Warn("live fold: gap not repaired", logkey.SessionID, h.id, logkey.After, last, logkey.Err, err)
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

// apply folds one event; views.Coalescer decides what is ready now.
func (h *hub) apply(e *core.Event) { _ = h.co.Apply(h.tl, e, h.collect) }

// collect adds a ready update to the next frame (views.Update.Merge: nodes
// render their state when the frame is rendered, so a node changed twice
// is sent once, as it is now). It never fails; the error is the
// Coalescer's signature.
func (h *hub) collect(u views.Update) error {
	if h.pending == nil {
		h.pending = &u
	} else {
		h.pending.Merge(u)
	}
	return nil
}

// send renders the pending updates once and queues the frame for every
// subscriber. An update that changes nothing on the page (usage, finish,
// tool-call deltas…) is still a frame: its SSE id alone, so every cursor,
// and the client's Last-Event-ID, moves past it.
func (h *hub) send(now time.Time) {
	u := *h.pending
	h.pending, h.lastFrame = nil, now
	var data []byte
	if u.Empty() {
		data = idOnly(u.Seq)
	} else {
		var err error
		data, err = renderFrame(h.ctx, h.tl, u)
		if err != nil {
			// No frame: subscribers see the gap and re-render it from
			// the log, which reports the failure in their streams.
			h.b.log.Error("live fold: render failed", logkey.SessionID, h.id, logkey.Seq, u.Seq, logkey.Err, err)
			data = nil
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f := frame{from: h.flushed + 1, seq: u.Seq, gen: h.gen, data: data}
	h.flushed = u.Seq
	if len(data) > 0 {
		h.broadcast(f)
	}
	// Adapt the pace to the slowest subscriber that keeps up.
	backlog := 0
	for s := range h.subs {
		if !s.lagged {
			backlog = max(backlog, len(s.ch))
		}
	}
	switch base := h.b.tune.FrameInterval; {
	case backlog > 1:
		h.interval = min(2*h.interval, 8*base)
	case backlog == 0 || h.interval > base:
		h.interval = max(h.interval/2, base)
	}
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
