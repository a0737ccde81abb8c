package web

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/core/redact"
	"prism/views"
)

// subscriber is one stream's queue on a hub.
type subscriber struct {
	ch     chan frame
	kick   chan struct{} // signalled when frames were dropped
	lagged bool          // guarded by hub.mu
	// queued is the bytes of the frames in ch: the hub adds a frame's
	// length when it queues it, the stream takes it off when it reads it.
	// A subscriber that would pass maxQueuedBytes lags instead (it is
	// caught up from the log with one coalesced frame once it reads
	// again), so a reader that stops reading holds at most that much.
	queued atomic.Int64
	// gen is the log generation the stream's cursor counts in; it is
	// owned by the stream's goroutine once subscribe returns.
	gen int
}

// maxQueuedBytes bounds the frame bytes queued for one subscriber.
const maxQueuedBytes = 256 << 10

// hub is the live fold of one view of a session: its owner's pages, or
// one share link's (view).
type hub struct {
	b      *Broker
	id     string // the session
	key    string // the broker's key (view.key)
	v      view
	ctx    context.Context
	cancel context.CancelFunc
	refs   int // guarded by Broker.mu

	ready   chan struct{}
	loadErr error

	mu      sync.Mutex
	queue   []core.Event
	replace bool // the log was replaced: reload it before taking queue
	// notes: the session's notes changed, read them again; askNotes are
	// subscribers that (re)connected and are sent the cards of every
	// noted call first.
	notes    bool
	askNotes []*subscriber
	// kids are the nested children that committed since the last look
	// (childMoved): only their calls' cards are rendered again, the
	// session's notes are not read.
	kids    map[string]bool
	subs    map[*subscriber]struct{}
	flushed int64 // seq covered by the last frame group handed out
	gen     int   // incremented each time the log is replaced
	err     error // why the hub stopped, when it failed
	wake    chan struct{}
	peak    int // the most subscribers it had at once
	// hdr and log are a link hub's view of the session: its header and
	// events, redacted as the link says, each event redacted once; log
	// only grows (a replaced log starts a new slice), so a reader may keep
	// the slice it was given. Catch-ups and the link's pages read them.
	hdr core.SessionHeader
	log []core.Event

	catchUps catchUpCache

	// Owned by the run goroutine.
	walker *redact.Walker // a redacting link's walker, nil otherwise
	// aliases are the names a link that nests children shows for them
	// (linkView.aliases), as last read; names their streamed text over
	// each run of chunks.
	aliases map[string]string
	names   aliasRun

	tl *views.Timeline
	// digest is readerDigest of the reader the fold was last given: what
	// the next change of notes or children is compared with (a nested
	// child's log grows in place, so the reader's own state is no record
	// of what the page was sent).
	digest map[string]string
	// own are an owner hub's own copies of the nested children's logs
	// (ownChild), by child; nested is what its pages were last sent of
	// the child nested in each subagent call's card, by call id: a
	// child's commit is sent as what changed in it (views.
	// RenderChildMovedFor).
	own    map[string]ownChild
	nested map[string]views.NestedSent
	co     views.Coalescer // chunk updates held until the Coalesce window closes
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

// notesChanged has the run goroutine read the session's notes again and
// send the cards whose labels changed.
func (h *hub) notesChanged() {
	h.mu.Lock()
	h.notes = true
	h.mu.Unlock()
	h.signal()
}

// childMoved has the run goroutine take child's new events into the
// nested child of the calls that link it and send those cards, without
// reading the session's notes again.
func (h *hub) childMoved(child string) {
	h.mu.Lock()
	if h.kids == nil {
		h.kids = map[string]bool{}
	}
	h.kids[child] = true
	h.mu.Unlock()
	h.signal()
}

// sendNotes has the run goroutine queue for s, in order with its frames,
// the cards of every call that has a note (removed ones included): what a
// (re)connected page needs to show the labels as they are now.
func (h *hub) sendNotes(s *subscriber) {
	if h.v.link != nil {
		return
	}
	h.mu.Lock()
	h.askNotes = append(h.askNotes, s)
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
	h.b.forgetHub(h)
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
	s.queued.Store(0)
	return h.flushed, h.gen
}

// load reads the session's log as the hub's view shows it: a link's
// redacted by a new walker (each event once), which the hub keeps for its
// catch-ups and the link's pages.
func (h *hub) load() (core.SessionHeader, []core.Event, error) {
	hdr, events, err := h.b.src.LoadSession(h.ctx, h.id)
	if err != nil || h.v.link == nil {
		return hdr, events, err
	}
	hdr = shareHeader(hdr)
	h.walker, h.names = nil, aliasRun{}
	if a := h.v.link.aliases; a != nil {
		if h.aliases, err = a(h.ctx); err != nil {
			return hdr, nil, err
		}
	}
	if r := h.v.link.redactor; r != nil {
		h.walker = r.Walker()
		hdr = h.walker.Header(hdr)
	}
	events = h.redact(events)
	h.mu.Lock()
	h.hdr, h.log = hdr, events[:len(events):len(events)]
	h.mu.Unlock()
	return hdr, events, nil
}

// redact returns a link's copies of events, which continue what it has
// taken: the descendants it nests named by their names on the link, then
// redacted when it redacts; others' events as they are.
func (h *hub) redact(events []core.Event) []core.Event {
	if len(events) == 0 {
		return events
	}
	events = h.names.events(events, h.aliases) // named before redacted (sharealias.go)
	if h.walker != nil {
		h.b.stats.redacted.Add(int64(len(events)))
		events = h.walker.Events(events)
	}
	return events
}

// renamed reads a link's names of its children again (their link notes
// changed) and reports whether the log the link has shown names a child
// that has a name only now (its link note came after its events, as an
// import's inferred links do), or a name moved: then the hub reloads the
// log, which names it everywhere.
func (h *hub) renamed() bool {
	if h.v.link == nil || h.v.link.aliases == nil {
		return false
	}
	a, err := h.v.link.aliases(h.ctx)
	if err != nil {
		h.b.log.Warn("share hub: names of the children not read", logkey.ShareID, h.v.link.id, logkey.Err, err)
		return false
	}
	var fresh []string
	moved := false
	for id, name := range a {
		switch old, ok := h.aliases[id]; {
		case !ok:
			fresh = append(fresh, id)
		case old != name:
			moved = true // a new descendant came before it (familyNames)
		}
	}
	h.aliases = a
	if moved {
		return true
	}
	if len(fresh) == 0 {
		return false
	}
	h.mu.Lock()
	log := h.log
	h.mu.Unlock()
	for i := range log {
		if namesFresh(log[i].Data, a) { // an id, or a child masked for want of a name (sharealias.go)
			return true
		}
	}
	return false
}

// timeline returns an empty fold of the view's session: the owner's
// (Broker.timeline), or a link's, read-only.
func (h *hub) timeline(hdr core.SessionHeader) *views.Timeline {
	if h.v.link == nil {
		return h.b.timeline(hdr)
	}
	t := views.NewTimeline(hdr, h.b.p)
	t.SetReader(h.v.link.reader(h.ctx))
	return t
}

// fold folds a log the hub loaded.
func (h *hub) fold(hdr core.SessionHeader, events []core.Event) *views.Timeline {
	t := h.timeline(hdr)
	t.ApplyAll(events)
	h.b.stats.folded.Add(int64(len(events)))
	return t
}

// renderRange renders the frame that brings a page of the view at after
// to upTo (Broker.renderRange), once per range for all the hub's readers
// (catchUpCache): the owner's from the log, a link's from the redacted
// log the hub holds.
func (h *hub) renderRange(ctx context.Context, after, upTo int64) ([]frame, error) {
	if upTo <= after {
		return nil, nil
	}
	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	// Rendered under the hub's context, not the asking stream's: the
	// readers waiting for the same range must not fail when the first
	// one leaves.
	data, err := h.catchUps.get(ctx, catchUpKey{gen: gen, after: after, upTo: upTo}, func() ([]byte, error) {
		h.b.stats.catchUps.Add(1)
		if h.v.link == nil {
			frames, err := h.b.renderRange(h.ctx, h.id, after, upTo)
			if err != nil || len(frames) == 0 {
				return nil, err
			}
			return frames[0].data, nil
		}
		h.mu.Lock()
		hdr, events := h.hdr, h.log
		h.mu.Unlock()
		return rangeFrame(h.ctx, h.timeline(hdr), h.v.links, events, after, upTo)
	})
	if err != nil {
		return nil, err
	}
	return []frame{{from: after + 1, seq: upTo, data: data}}, nil
}

// renderPageAt renders the reset frame that brings a page of the view to
// upTo whatever it showed (Broker.renderPageAt).
func (h *hub) renderPageAt(ctx context.Context, upTo int64) ([]byte, error) {
	if h.v.link == nil {
		return h.b.renderPageAt(ctx, h.id, upTo)
	}
	h.mu.Lock()
	hdr, events := h.hdr, h.log
	h.mu.Unlock()
	tl := h.timeline(hdr)
	tl.ApplyAll(events[:views.EventsThrough(events, upTo)])
	return h.page(ctx, tl, upTo)
}

// page renders the view's page window of tl as one morph with id seq.
func (h *hub) page(ctx context.Context, tl *views.Timeline, seq int64) ([]byte, error) {
	patches, err := views.RenderPageFor(ctx, tl, h.v.links, h.b.tune.Window)
	if err != nil {
		return nil, err
	}
	return formatPatches(patches, strconv.FormatInt(seq, 10)), nil
}

// watchLink ends a link's hub once the link no longer grants access,
// checking every Tuning.ShareCheck for as long as the hub runs: its
// streams are told at once, with no check of their own.
func (h *hub) watchLink() {
	t := time.NewTicker(h.b.tune.ShareCheck)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		err := h.v.link.active(h.ctx)
		switch {
		case errors.Is(err, errLinkEnded):
			h.stop(errLinkEnded)
			return
		case err != nil && h.ctx.Err() == nil:
			h.b.log.Warn("share hub: link not checked", logkey.ShareID, h.v.link.id, logkey.Err, err)
		}
	}
}

func (h *hub) run() {
	hdr, events, err := h.load()
	if err != nil {
		h.loadErr = sessionGone(err)
		close(h.ready)
		return
	}
	h.tl = h.fold(hdr, events)
	h.tl.SetReader(h.privatize(h.tl.Reader()))
	h.digest = readerDigest(h.tl.Reader())
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
		q, replace, notes, ask, kids := h.queue, h.replace, h.notes, h.askNotes, h.kids
		h.queue, h.replace, h.notes, h.askNotes, h.kids = nil, false, false, nil, nil
		h.mu.Unlock()
		if notes && h.renamed() {
			replace = true
		}
		if replace && !h.reload() {
			return
		}
		h.take(q)
		switch {
		case notes:
			h.rereadNotes()
		case len(kids) > 0:
			h.rereadChildren(kids)
		}
		if len(ask) > 0 {
			h.answerNotes(ask)
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
	hdr, events, err := h.load()
	if err == nil {
		h.co.Reset()
		h.chunkDue, h.pending = time.Time{}, nil // the reset frame covers them
		h.tl = h.fold(hdr, events)
		h.own, h.nested = nil, nil
		h.tl.SetReader(h.privatize(h.tl.Reader()))
		h.digest = readerDigest(h.tl.Reader())
		var data []byte
		if data, err = h.page(h.ctx, h.tl, h.tl.LastSeq()); err == nil {
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

// take applies published events: those that continue the fold, a gap
// repaired from the log first, redacted together when the view is a
// redacting link's (once, for all its readers).
func (h *hub) take(q []core.Event) {
	last := h.tl.LastSeq()
	var batch []core.Event
	for i := range q {
		e := &q[i]
		if e.Seq <= last {
			continue // already folded (the load raced the publish)
		}
		if e.Seq > last+1 {
			missing, err := h.b.src.EventsAfter(h.ctx, h.id, last)
			if err != nil {
				h.b.log.Warn("live fold: gap not repaired", logkey.SessionID, h.id, logkey.After, last, logkey.Err, err)
			}
			for j := range missing {
				if missing[j].Seq >= e.Seq {
					break
				}
				if missing[j].Seq > last {
					batch = append(batch, missing[j])
					last = missing[j].Seq
				}
			}
		}
		batch = append(batch, *e)
		last = e.Seq
	}
	if len(batch) == 0 {
		return
	}
	if h.v.link != nil {
		batch = h.redact(batch)
		h.mu.Lock()
		h.log = append(h.log, batch...)
		h.mu.Unlock()
	}
	h.b.stats.folded.Add(int64(len(batch)))
	for i := range batch {
		h.apply(&batch[i])
	}
}

// rereadNotes takes the session's notes afresh (the owner's reader) and
// broadcasts the cards of the calls whose notes changed.
func (h *hub) rereadNotes() {
	var rd views.Reader
	switch {
	case h.v.link != nil:
		rd = h.v.link.reader(h.ctx)
	case h.b.reader != nil:
		rd = h.b.reader(h.id)
	default:
		return
	}
	h.tl.SetReader(h.privatize(rd))
	h.sendChanged(readerDigest(h.tl.Reader()))
}

// ownChild is an owner hub's copy of a nested child's log: made from the
// server's shared log (from) and extended only by the hub's goroutine,
// so what its pages were sent of the child is what the hub's fold shows
// until the hub moves it (rereadChildren) — page renders extend the
// shared log at any time.
type ownChild struct {
	from, log *views.ChildLog
}

// privatize returns rd with an owner hub's own copies of its nested
// children, extended to the shared logs' events (a link's hub: rd).
func (h *hub) privatize(rd views.Reader) views.Reader {
	if h.v.link != nil || rd.Children == nil {
		return rd
	}
	own := make(map[string]ownChild, len(rd.Children))
	children := make(map[string]*views.ChildLog, len(rd.Children))
	for id, shared := range rd.Children {
		o := h.own[id]
		switch {
		case o.log == nil || o.from != shared:
			o = ownChild{from: shared, log: &views.ChildLog{Header: shared.Header, Events: shared.Log()}}
		case !o.log.Extend(shared.Log()):
			o.log = &views.ChildLog{Header: shared.Header, Events: shared.Log()}
		}
		own[id], children[id] = o, o.log
	}
	h.own = own
	rd.Children = children
	return rd
}

// rereadChildren takes the moved children's logs as they are now into
// the fold's reader, its notes as they were, and broadcasts what changed
// in the cards that nest them.
func (h *hub) rereadChildren(kids map[string]bool) {
	rd := h.tl.Reader()
	if h.b.child == nil || rd.Children == nil {
		return
	}
	children := make(map[string]*views.ChildLog, len(rd.Children))
	for id, c := range h.own {
		children[id] = c.from
	}
	for id := range kids {
		c, err := h.b.child(id)
		switch {
		case err == nil:
			children[id] = c
		case core.ErrorCode(err) == core.CodeNotFound:
			delete(children, id) // deleted: its card says so
			h.b.unwatchChild(h.id, id)
		default:
			// Not read now: the card stays as it was until its next commit.
			h.b.log.Warn("live fold: child not read", logkey.SessionID, id, logkey.Err, err)
		}
	}
	rd.Children = children
	h.tl.SetReader(h.privatize(rd))
	after := readerDigest(h.tl.Reader())
	calls := changedCalls(h.digest, after)
	h.digest = after
	if data := h.childFrame(calls); len(data) > 0 {
		h.mu.Lock()
		h.broadcast(frame{notes: true, gen: h.gen, data: data})
		h.mu.Unlock()
	}
}

// childFrame renders what changed in the nested children of calls since
// the hub's pages were last sent them (views.RenderChildMovedFor), or, if
// that cannot be rendered, the calls' whole cards.
func (h *hub) childFrame(calls []string) []byte {
	if h.nested == nil {
		h.nested = map[string]views.NestedSent{}
	}
	var patches []views.Patch
	for _, call := range calls {
		p, next, ok, err := views.RenderChildMovedFor(h.ctx, h.tl, h.v.links, call, h.nested[call])
		if err != nil {
			h.b.log.Error("live fold: nested child not rendered", logkey.SessionID, h.id, logkey.CallID, call, logkey.Err, err)
			for _, c := range calls {
				delete(h.nested, c)
			}
			return h.cardsFrame(calls)
		}
		if ok {
			patches = append(patches, p...)
			h.nested[call] = next
		}
	}
	if len(patches) == 0 {
		return nil
	}
	return formatPatches(patches, "")
}

// changedCalls returns the calls whose digest differs between before and
// after.
func changedCalls(before, after map[string]string) []string {
	var calls []string
	for call, d := range after {
		if before[call] != d {
			calls = append(calls, call)
		}
	}
	for call := range before {
		if _, ok := after[call]; !ok {
			calls = append(calls, call)
		}
	}
	return calls
}

// sendChanged broadcasts the cards of the calls whose digest differs from
// what the page was last sent (h.digest), and keeps after as that. Their
// nested children are sent whole: what the pages were sent of them is
// known again at their next move.
func (h *hub) sendChanged(after map[string]string) {
	calls := changedCalls(h.digest, after)
	h.digest = after
	for _, c := range calls {
		delete(h.nested, c)
	}
	data := h.cardsFrame(calls)
	if len(data) == 0 {
		return
	}
	h.mu.Lock()
	h.broadcast(frame{notes: true, gen: h.gen, data: data})
	h.mu.Unlock()
}

// answerNotes queues for each subscriber in subs the cards of every call
// that has a note.
func (h *hub) answerNotes(subs []*subscriber) {
	var calls []string
	for call := range noteDigest(h.tl.Reader().Notes) {
		calls = append(calls, call)
	}
	data := h.cardsFrame(calls)
	if len(data) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f := frame{notes: true, gen: h.gen, data: data}
	for _, s := range subs {
		if _, ok := h.subs[s]; !ok || s.lagged {
			continue
		}
		select {
		case s.ch <- f:
			s.queued.Add(int64(len(f.data)))
		default:
			s.lagged = true
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
}

// cardsFrame renders the cards of calls as the hub's fold has them now,
// and the session header's labels for call "" (nil when none of them is
// on the page).
func (h *hub) cardsFrame(calls []string) []byte {
	if len(calls) == 0 {
		return nil
	}
	slices.Sort(calls)
	var patches []views.Patch
	var ends []int64
	calls = slices.DeleteFunc(calls, func(c string) bool {
		if seq, ok := strings.CutPrefix(c, turnEndKey); ok {
			if n, err := strconv.ParseInt(seq, 10, 64); err == nil {
				ends = append(ends, n)
			}
			return true
		}
		return false
	})
	if len(ends) > 0 {
		p, ok, err := views.RenderTurnEndsFor(h.ctx, h.tl, h.v.links, ends)
		if err != nil {
			h.b.log.Error("live fold: turn dividers not rendered", logkey.SessionID, h.id, logkey.Err, err)
			return nil
		}
		if ok {
			patches = append(patches, p)
		}
	}
	if len(calls) > 0 && calls[0] == "" {
		calls = calls[1:]
		p, ok, err := views.RenderSessionLabelsFor(h.ctx, h.tl, h.v.links)
		if err != nil {
			h.b.log.Error("live fold: labels not rendered", logkey.SessionID, h.id, logkey.Err, err)
			return nil
		}
		if ok {
			patches = append(patches, p)
		}
		if p, ok, err := views.RenderSessionAttentionFor(h.ctx, h.tl, h.v.links); err == nil && ok {
			patches = append(patches, p)
		}
		if p, ok, err := views.RenderSessionForksFor(h.ctx, h.tl, h.v.links); err == nil && ok {
			patches = append(patches, p) // the header's forks (fork notes)
		}
	}
	p, ok, err := views.RenderCallCardsFor(h.ctx, h.tl, h.v.links, calls)
	if err != nil {
		h.b.log.Error("live fold: labels not rendered", logkey.SessionID, h.id, logkey.Err, err)
		return nil
	}
	if ok {
		patches = append(patches, p)
	}
	if len(patches) == 0 {
		return nil
	}
	return formatPatches(patches, "")
}

// turnEndKey prefixes noteDigest's key of a "repair" note: the seq of the
// turn/end whose divider it changes (never a call id: call ids have no
// NUL).
const turnEndKey = "\x00turn-end:"

// readerDigest is noteDigest of rd's notes with, for each call that
// links a child, the child's last seq and event count (or its absence):
// a child's commit changes its call's digest.
func readerDigest(rd views.Reader) map[string]string {
	out := noteDigest(rd.Notes)
	for _, n := range rd.Notes {
		if n.Kind != notes.KindLink {
			continue
		}
		d, err := notes.ParseLink(n.Data)
		if err != nil {
			continue
		}
		c := rd.Children[d.Child]
		if c == nil {
			out[n.CallID] += "\x00gone"
			continue
		}
		events := c.Log()
		out[n.CallID] += "\x00" + strconv.FormatInt(lastSeqOf(events), 10) + "/" + strconv.Itoa(len(events))
	}
	return out
}

// noteDigest maps each call that has a note ("" for the session's own) to
// a digest of its notes; a "repair" note is keyed by its turn/end
// (turnEndKey and the seq).
func noteDigest(ns []notes.Note) map[string]string {
	out := map[string]string{}
	for _, n := range ns {
		key := n.CallID
		if n.Kind == notes.KindRepair {
			key = turnEndKey + strconv.FormatInt(n.AtSeq, 10)
		}
		removed := int64(-2)
		if n.RemovedAtSeq != nil {
			removed = *n.RemovedAtSeq
		}
		out[key] += n.ID + "\x00" + string(n.Data) + "\x00" + strconv.FormatInt(removed, 10) + "\x00" + n.Author + "\x00"
	}
	return out
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
		h.b.stats.frames.Add(1)
		data, err = renderFrameFor(h.ctx, h.tl, h.v.links, u)
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
		if n := int64(len(f.data)); s.queued.Load() > 0 && s.queued.Load()+n > maxQueuedBytes {
			// Past its byte bound: it lags (and is caught up with one
			// coalesced frame once it reads again).
			s.lagged = true
			h.b.stats.dropped.Add(1)
			select {
			case s.kick <- struct{}{}:
			default:
			}
			continue
		}
		select {
		case s.ch <- f:
			s.queued.Add(int64(len(f.data)))
		default:
			s.lagged = true
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
}
