package web

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"prism/core"
	"prism/core/memrelease"
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
// summaries, at most every Tuning.ListThrottle; the operators' board one
// that renders the board once per change for all its viewers (boardHub).
//
// The live path by file: broker.go holds the registry of hubs and the
// catch-up renders a stream makes from the log; hub.go one session's live
// fold and its subscribers' queues; listhub.go the session list's rows;
// boardhub.go the board's;
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
	board  *boardHub

	// sessions indexes hubs by the session they fold: a session's owner
	// hub and the hubs of its live share links all take its commits.
	sessions map[string]map[*hub]struct{}

	// stats counts the live path's work (liveStats).
	stats liveStats

	// reader is what a session's pages show their reader, the owner
	// (Server.ownerReader; nil: the zero Reader); set before the first
	// subscription.
	reader func(sessionID string) views.Reader

	// parents maps a child session to the parents whose pages nest it
	// (watchChildren): a child's commit is news to its parents' hubs.
	// nests is the same relation from the parent's side. An entry goes
	// when the parent has no hub left (its last page closed, or it was
	// deleted), or the child is gone (unwatchChild): the maps hold the
	// families of open pages only.
	parents map[string]map[string]bool
	nests   map[string]map[string]bool

	// child returns a nested child's log as it is now (Server.readChild;
	// nil: children are not nested live).
	child func(id string) (*views.ChildLog, error)

	// families keeps the family each link made with its children names
	// (Server.linkFamily), until a member's notes change or its log is
	// replaced (familyChanged).
	families familyCache
}

// watchChildren records that parent's pages nest children: their commits,
// replacements and deletions reach parent's owner hubs as a change of
// parent's notes.
func (b *Broker) watchChildren(parent string, children []string) {
	if len(children) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.parents == nil {
		b.parents, b.nests = map[string]map[string]bool{}, map[string]map[string]bool{}
	}
	if b.nests[parent] == nil {
		b.nests[parent] = map[string]bool{}
	}
	for _, c := range children {
		if b.parents[c] == nil {
			b.parents[c] = map[string]bool{}
		}
		b.parents[c][parent] = true
		b.nests[parent][c] = true
	}
}

// unwatchLocked forgets that parent nests child (b.mu is held).
func (b *Broker) unwatchLocked(parent, child string) {
	delete(b.parents[child], parent)
	if len(b.parents[child]) == 0 {
		delete(b.parents, child)
	}
	delete(b.nests[parent], child)
	if len(b.nests[parent]) == 0 {
		delete(b.nests, parent)
	}
}

// forgetParentLocked forgets every child parent nests: it has no open
// page left (b.mu is held).
func (b *Broker) forgetParentLocked(parent string) {
	for c := range b.nests[parent] {
		b.unwatchLocked(parent, c)
	}
}

// unwatchChild forgets that parent nests child: the child is gone.
func (b *Broker) unwatchChild(parent, child string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unwatchLocked(parent, child)
}

// childChanged tells the hubs of child's parents that it changed: an
// owner's hub takes the child's new events into the cards that nest it
// (hub.childMoved: the parent's notes are not read again); a share link's
// reads its reader again (its children are redacted with it).
func (b *Broker) childChanged(child string) {
	b.mu.Lock()
	var hubs []*hub
	for p := range b.parents[child] {
		if len(b.sessions[p]) == 0 {
			// A page rendered it, no stream follows it.
			b.forgetParentLocked(p)
			continue
		}
		for h := range b.sessions[p] {
			hubs = append(hubs, h)
		}
	}
	b.mu.Unlock()
	for _, h := range hubs {
		if h.v.link == nil {
			h.childMoved(child)
		} else {
			h.notesChanged()
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
	b.board = newBoardHub(b)
	return b
}

// Publish hands committed events of one session to the live path. It is
// what a CommitFeed calls after each commit; it never blocks on
// subscribers and never renders on the caller's goroutine. Every hub of
// the session takes them: its owner's and those of its live share links.
func (b *Broker) Publish(sessionID string, events []core.Event) {
	if len(events) > 0 {
		for _, h := range b.hubsOf(sessionID) {
			h.enqueue(events)
		}
		b.childChanged(sessionID)
	}
	b.list.touch(sessionID)
	b.board.touch(sessionID, events)
}

// Replace tells the live path that a session's whole log was replaced (what
// a CommitFeed's OnReplace calls). The session's hubs drop what they folded
// and queued, reload the log from the source, and send every subscriber
// the page re-rendered from it; later events continue the new log.
func (b *Broker) Replace(sessionID string) {
	// The families it is in are dropped before any hub wakes (a hub that
	// reloads reads its names again).
	family := b.familyChanged(sessionID)
	for _, h := range b.hubsOf(sessionID) {
		h.replaced()
	}
	for _, h := range family {
		h.notesChanged()
	}
	b.childChanged(sessionID)
	b.list.touch(sessionID)
	b.board.replaced(sessionID)
}

// Notes tells the live path that a session's notes changed (what a
// NoteFeed's OnNotes calls): the session's hubs read them again and send
// every subscriber the cards whose labels changed — a share link's hub
// only what the link shows (Server.shareNotes), so a link without labels
// is sent nothing for a label.
func (b *Broker) Notes(sessionID string) {
	// A member's link notes name a link's descendants: the families it is
	// in are dropped before any hub wakes, and the hubs of the links
	// whose family it is in read their names again (hub.renamed), as the
	// session's own hubs do.
	family := b.familyChanged(sessionID)
	for _, h := range b.hubsOf(sessionID) {
		h.notesChanged()
	}
	for _, h := range family {
		h.notesChanged()
	}
	b.list.touch(sessionID) // an attention badge on its row
	b.board.touch(sessionID, nil)
}

// familyChanged drops the kept families that session is a member of (its
// notes changed, or its log was replaced or deleted, which may change
// them) and returns the open hubs of other sessions' links made with their
// children whose names may have moved: those whose family held session,
// and those whose family is not kept now (read before the change, or
// dropped from a full cache) — never a hub of session itself.
func (b *Broker) familyChanged(session string) []*hub {
	dropped := b.families.invalidate(session)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*hub
	for _, h := range b.hubs {
		if h.v.link == nil || h.v.link.aliases == nil || h.id == session {
			continue
		}
		if key := familyKey(h.v.link.id, h.id); dropped[key] || !b.families.has(key) {
			out = append(out, h)
		}
	}
	return out
}

// hubsOf returns the open hubs of a session.
func (b *Broker) hubsOf(sessionID string) []*hub {
	b.mu.Lock()
	defer b.mu.Unlock()
	hubs := make([]*hub, 0, len(b.sessions[sessionID]))
	for h := range b.sessions[sessionID] {
		hubs = append(hubs, h)
	}
	return hubs
}

// forgetHub removes h from the registry (b.mu is held).
func (b *Broker) forgetHub(h *hub) {
	if b.hubs[h.key] != h {
		return
	}
	delete(b.hubs, h.key)
	delete(b.sessions[h.id], h)
	if len(b.sessions[h.id]) == 0 {
		delete(b.sessions, h.id)
		b.forgetParentLocked(h.id)
	}
}

// endLink ends the hub of share link shareID, if one is open: its streams
// report errLinkEnded and end at once (the link was revoked).
func (b *Broker) endLink(shareID string) {
	b.mu.Lock()
	var ended []*hub
	for _, h := range b.hubs {
		if h.v.link != nil && h.v.link.id == shareID {
			ended = append(ended, h)
		}
	}
	b.mu.Unlock()
	for _, h := range ended {
		h.stop(errLinkEnded)
	}
}

// linkLog returns the redacted header and log that the open hub of v
// holds (ok false when none is open, or it has not loaded yet): what a
// link's page reads instead of loading and redacting the log again.
func (b *Broker) linkLog(v view) (core.SessionHeader, []core.Event, bool) {
	b.mu.Lock()
	h := b.hubs[v.key]
	b.mu.Unlock()
	if h == nil || h.v.link == nil {
		return core.SessionHeader{}, nil, false
	}
	select {
	case <-h.ready:
	default:
		return core.SessionHeader{}, nil, false
	}
	if h.loadErr != nil || h.ctx.Err() != nil {
		return core.SessionHeader{}, nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hdr, h.log[:len(h.log):len(h.log)], true
}

// Close stops every hub and the list hub; open streams end (each watches
// its hub) after reporting it in the page's #stream-status.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	hubs := b.hubs
	b.hubs = map[string]*hub{}
	b.sessions = nil
	b.parents, b.nests = nil, nil
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
	// notes: the frame re-renders the cards whose labels changed, at the
	// hub's state; it carries no seq (no SSE id) and moves no cursor.
	notes bool
	data  []byte
}

// subscribe joins (or starts) the hub of session id as its owner's pages
// show it. It returns the subscription and the seq its first frame
// follows.
func (b *Broker) subscribe(ctx context.Context, id string) (*hub, *subscriber, int64, error) {
	return b.subscribeView(ctx, ownerView(id))
}

// subscribeView joins (or starts) the hub of v.
func (b *Broker) subscribeView(ctx context.Context, v view) (*hub, *subscriber, int64, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, nil, 0, core.Errorf(core.CodeUnavailable, "server is shutting down")
	}
	h := b.hubs[v.key]
	if h == nil {
		hctx, cancel := context.WithCancel(context.Background())
		h = &hub{b: b, id: v.session, key: v.key, v: v, ctx: hctx, cancel: cancel, ready: make(chan struct{}),
			subs: map[*subscriber]struct{}{}, wake: make(chan struct{}, 1), flushed: -1}
		b.hubs[v.key] = h
		if b.sessions == nil {
			b.sessions = map[string]map[*hub]struct{}{}
		}
		if b.sessions[v.session] == nil {
			b.sessions[v.session] = map[*hub]struct{}{}
		}
		b.sessions[v.session][h] = struct{}{}
		go h.run()
		if v.link != nil {
			go h.watchLink()
		}
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
	h.peak = max(h.peak, len(h.subs))
	at := h.flushed
	s.gen = h.gen
	h.mu.Unlock()
	return h, s, at, nil
}

func (b *Broker) unsubscribe(h *hub, s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	// A crowd that has mostly left gives its memory back, even while the
	// hub goes on for the readers who stay.
	left := h.peak >= crowdSize && len(h.subs) <= h.peak/4
	if left {
		h.peak = len(h.subs)
	}
	h.mu.Unlock()
	b.release(h)
	if left {
		b.releaseMemory()
	}
}

// release drops one reference; the last one stops the hub. A hub that
// served a crowd returns its memory to the operating system (releaseMemory).
func (b *Broker) release(h *hub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		b.forgetHub(h)
		h.cancel()
		h.mu.Lock()
		crowd := h.peak >= crowdSize
		h.mu.Unlock()
		if crowd {
			b.releaseMemory()
		}
	}
}

// crowdSize is the number of subscribers from which a hub counts as a
// crowd's: when the crowd leaves (the hub ends, or keeps a quarter of
// them), the memory its streams held is handed back to the operating
// system at once rather than at the runtime's pace.
const crowdSize = 64

// releaseMemory returns freed memory to the operating system: a crowd of
// readers that leaves gives back what its streams held (their connections'
// buffers and goroutines, the frames queued for them), which an idle
// server's runtime would otherwise keep. It asks the process's one policy,
// shared with imports (memrelease.Release: at most one debug.FreeOSMemory
// per memrelease.Interval, a request within it deferred to its end, so the
// last readers' memory is returned too); it never blocks.
func (b *Broker) releaseMemory() { memrelease.Release() }

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
	data, err := rangeFrame(ctx, b.timeline(hdr), views.SessionLinks(id), events, after, upTo)
	if err != nil {
		return nil, err
	}
	return []frame{{from: after + 1, seq: upTo, data: data}}, nil
}

// rangeFrame folds events (a log from its start) into tl up to upTo and
// renders, with the reader's URLs l, the one frame that brings a page at
// after to upTo (renderRange).
func rangeFrame(ctx context.Context, tl *views.Timeline, l views.Links, events []core.Event, after, upTo int64) ([]byte, error) {
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
		return idOnly(upTo), nil
	}
	merged.Seq = upTo
	return renderFrameFor(ctx, tl, l, *merged)
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
