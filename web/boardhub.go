package web

import (
	"context"
	"slices"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"prism/core"
	"prism/core/logkey"
)

// boardHub renders the operators' board (/board/stream) once per change
// and hands the same bytes to every viewer, as a session's hub does for
// its pages: N viewers cost one render, not N.
//
// It runs while the board has viewers. Committed events (Broker.Publish)
// mark it dirty and feed its in-memory tails — per running session, the
// calls still waiting for their result — so a render reads the store once
// for the running sessions' summaries and reads a session's events only
// when its tail is not known yet or lags its summary. Renders are at
// least Tuning.FrameInterval apart (and twice the last render's time, so
// a slow render cannot take the server), and every boardRefresh without
// a change (the ages of calls in flight move).
type boardHub struct {
	b *Broker
	// render renders the board's rows as one SSE frame, a session's call
	// in flight found by inFlight (Server.boardFrame).
	render func(ctx context.Context, inFlight inFlightFunc) ([]byte, error)
	// known is what GET /board knows of the running sessions' tails
	// between paints, whether or not the board has viewers (replaced
	// forgets a session's).
	known *boardTails
	// cells is each row's HTML between renders, GET /board's and this
	// hub's alike.
	cells *boardCells

	mu      sync.Mutex
	subs    map[*boardSub]struct{}
	queue   map[string][]core.Event // published since the last render, per session
	reset   map[string]bool         // sessions whose log was replaced since
	dirty   bool
	wake    chan struct{}
	cancel  context.CancelFunc // the running loop's; nil when none runs
	frame   []byte             // the latest render
	err     error              // why the latest render failed
	version uint64             // counts renders (and failures)
}

// inFlightFunc returns each running session's latest call still waiting
// for its result (one per summary, in order), reading what it lacks of the
// sessions' logs in one read.
type inFlightFunc func(ctx context.Context, sums []SessionSummary) []inFlightCall

// inFlightCall is a session's latest call still waiting for its result:
// its tool and when it started (ok false: none).
type inFlightCall struct {
	call string
	at   int64
	ok   bool
}

// boardSub is one board stream: kicked when a new render is ready.
type boardSub struct {
	kick chan struct{}
	seen uint64 // the version the stream wrote last; owned by the stream
}

func newBoardHub(b *Broker) *boardHub {
	return &boardHub{b: b, known: newBoardTails(), cells: newBoardCells(), subs: map[*boardSub]struct{}{}, queue: map[string][]core.Event{}, reset: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// subscribe adds a board stream, starting the render loop for the first.
func (h *boardHub) subscribe() *boardSub {
	s := &boardSub{kick: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.seen = h.version
	h.subs[s] = struct{}{}
	if h.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go h.run(ctx)
	}
	return s
}

// unsubscribe removes a board stream; the last one stops the loop and
// drops what it held.
func (h *boardHub) unsubscribe(s *boardSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	if len(h.subs) == 0 && h.cancel != nil {
		h.cancel()
		h.cancel = nil
		h.queue, h.reset = map[string][]core.Event{}, map[string]bool{}
		h.dirty = false
		h.frame, h.err = nil, nil
	}
}

// current returns the latest render, its version, and why it failed.
func (h *boardHub) current() ([]byte, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.frame, h.version, h.err
}

// touch tells the board that session id committed events (none: its
// summary or notes changed). It never blocks and renders nothing.
func (h *boardHub) touch(id string, events []core.Event) { h.changed(id, events, false) }

// replaced tells the board that session id's whole log was replaced (or
// the session deleted): what it knew of its tail is dropped.
func (h *boardHub) replaced(id string) {
	h.known.forget(id)
	h.changed(id, nil, true)
}

func (h *boardHub) changed(id string, events []core.Event, replaced bool) {
	h.mu.Lock()
	if h.cancel == nil {
		h.mu.Unlock()
		return
	}
	if replaced {
		delete(h.queue, id)
		h.reset[id] = true
	}
	if len(events) > 0 {
		h.queue[id] = append(h.queue[id], events...)
	}
	h.dirty = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// run is the render loop: one render per change (changes that come
// while one is due are in it), every viewer sent the same bytes.
func (h *boardHub) run(ctx context.Context) {
	// What GET /board's paints read (a viewer's page was painted just
	// before its stream opened): the first render reads only what moved
	// since.
	tails := h.known.snapshot()
	tick := time.NewTicker(boardRefresh)
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var last time.Time
	gap := h.b.tune.FrameInterval
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
		case <-tick.C:
			force = true
		}
		if wait := time.Until(last.Add(gap)); wait > 0 && !force {
			timer.Reset(wait)
			continue
		}
		h.mu.Lock()
		q, reset, dirty := h.queue, h.reset, h.dirty
		h.queue, h.reset, h.dirty = map[string][]core.Event{}, map[string]bool{}, false
		h.mu.Unlock()
		for id := range reset {
			delete(tails, id)
		}
		for id, evs := range q {
			if t := tails[id]; t != nil {
				c := t.clone() // t may be shared (boardTails): never changed in place
				if c.take(evs) {
					tails[id] = c
				} else {
					delete(tails, id) // a gap: read again when needed
				}
			}
		}
		if !dirty && !force {
			continue
		}
		start := time.Now()
		frame, err := h.renderOnce(ctx, tails)
		if ctx.Err() != nil {
			return
		}
		last = time.Now()
		gap = max(h.b.tune.FrameInterval, 2*last.Sub(start))
		if err != nil {
			h.b.log.Warn("board: not rendered", logkey.Err, err)
		}
		h.mu.Lock()
		h.frame, h.err = frame, err
		h.version++
		for s := range h.subs {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
		h.mu.Unlock()
	}
}

// renderOnce renders the board, finding calls in flight in tails (read
// from the store for a session not tracked yet, or whose tail lags its
// summary); tails keeps only the sessions the board shows.
func (h *boardHub) renderOnce(ctx context.Context, tails map[string]*callTail) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shown := map[string]bool{}
	frame, err := h.render(ctx, func(ctx context.Context, sums []SessionSummary) []inFlightCall {
		for i := range sums {
			shown[sums[i].ID] = true
		}
		return callsInFlight(ctx, h.b.src, sums, tails)
	})
	for id := range tails {
		if !shown[id] {
			delete(tails, id)
		}
	}
	return frame, err
}

// callsInFlight finds each running session's latest call still waiting
// for its result in tails, which it brings up to the sessions' summaries:
// a session with every call answered at its last seq needs no read; one
// whose tail is not known yet, or lags its summary, is read (its last
// inFlightTail events, or from where its tail ends) — all of them in one
// read (SessionSource.EventsAfterEach). A read that fails, or a tail with
// a gap, leaves the session's tail unknown and its call not shown.
func callsInFlight(ctx context.Context, src SessionSource, sums []SessionSummary, tails map[string]*callTail) []inFlightCall {
	read := map[string]int64{}
	var peeked []int // the sums whose tails were not known: read from their last inFlightPeek events
	for i := range sums {
		m := &sums[i]
		t := tails[m.ID]
		switch {
		case m.Calls == m.Results:
			// Nothing in flight at m.LastSeq: known without a read.
			if t == nil || t.last < m.LastSeq || (t.last == m.LastSeq && len(t.open) > 0) {
				tails[m.ID] = &callTail{last: m.LastSeq}
			}
		case t == nil || t.last < m.LastSeq:
			from := max(m.LastSeq-inFlightTail, -1)
			if t == nil || t.last < from {
				// Not known: its last inFlightPeek events first.
				from = max(m.LastSeq-inFlightPeek, -1)
				tails[m.ID] = &callTail{last: from}
				peeked = append(peeked, i)
			} else {
				from = t.last
				tails[m.ID] = t.clone() // tails may be shared (boardTails): never changed in place
			}
			read[m.ID] = from
		}
	}
	readTails(ctx, src, read, tails)
	// A peek that found fewer calls waiting than its summary counts, and
	// did not reach the log's start, is read again over inFlightTail
	// events: what the board shows is what that read finds.
	wide := map[string]int64{}
	for _, i := range peeked {
		m := &sums[i]
		if read[m.ID] < 0 {
			continue // the peek read the whole log
		}
		if t := tails[m.ID]; t == nil || int64(len(t.open)) < m.Calls-m.Results {
			from := max(m.LastSeq-inFlightTail, -1)
			tails[m.ID] = &callTail{last: from}
			wide[m.ID] = from
		}
	}
	readTails(ctx, src, wide, tails)
	out := make([]inFlightCall, len(sums))
	for i := range sums {
		if t := tails[sums[i].ID]; t != nil {
			out[i].call, out[i].at, out[i].ok = t.inFlight()
		}
	}
	return out
}

// readTails reads the tails of the sessions of read (after the seq each)
// in one read and applies them to tails; a session whose read failed or
// found a gap is dropped from tails (not known).
func readTails(ctx context.Context, src SessionSource, read map[string]int64, tails map[string]*callTail) {
	if len(read) == 0 {
		return
	}
	got, err := src.EventsAfterEach(ctx, read)
	for id := range read {
		if err != nil || !tails[id].take(got[id]) {
			delete(tails, id)
		}
	}
}

// callTail is what the board knows of a running session's log: the seq
// it has seen up to and its calls still waiting for their result, oldest
// first (at most inFlightTail of them).
type callTail struct {
	last int64
	open []openCall
}

type openCall struct {
	id, name string
	at       int64
}

// clone returns a copy of t that take may change.
func (t *callTail) clone() *callTail {
	return &callTail{last: t.last, open: slices.Clone(t.open)}
}

// take applies events that continue the tail (those at or before last
// are skipped). It returns false on a gap: the tail is no longer known.
//
// It decodes what it reads of an event's data with the JSON v2 engine
// under encoding/json's semantics (as core does): the same values,
// fewer allocations.
func (t *callTail) take(events []core.Event) bool {
	v1 := jsonv1.DefaultOptionsV1()
	for i := range events {
		e := &events[i]
		switch {
		case e.Seq <= t.last:
			continue
		case e.Seq > t.last+1:
			return false
		}
		t.last = e.Seq
		switch e.Type {
		case core.EventToolCall:
			var d struct {
				CallID string `json:"callId"`
				Name   string `json:"name"`
			}
			if jsonv2.Unmarshal(e.Data, &d, v1) == nil {
				if len(t.open) >= inFlightTail {
					t.open = append(t.open[:0], t.open[1:]...)
				}
				t.open = append(t.open, openCall{id: d.CallID, name: d.Name, at: e.Time})
			}
		case core.EventToolResult:
			// Only the call id (core.FactsOf's CallID of a result): the
			// result's content is not decoded.
			var d struct {
				Message struct {
					Source struct {
						CallID string `json:"callId"`
					} `json:"source"`
				} `json:"message"`
			}
			_ = jsonv2.Unmarshal(e.Data, &d, v1)
			id := d.Message.Source.CallID
			for j := range t.open {
				if t.open[j].id == id {
					t.open = append(t.open[:j], t.open[j+1:]...)
					break
				}
			}
		}
	}
	return true
}

// inFlight returns the latest call still waiting.
func (t *callTail) inFlight() (string, int64, bool) {
	if len(t.open) == 0 {
		return "", 0, false
	}
	c := t.open[len(t.open)-1]
	return c.name, c.at, true
}
