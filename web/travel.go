package web

// Time travel on the session page: the page at an event (?at=), jumps to a
// call or an event (?call=, ?card=, ?event=), the moves of the replay
// transport (seek, step, pause) and playback on the page's stream.

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/starfederation/datastar-go/datastar"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/views"
)

// Replay modes, the page's ttMode signal: live (following the session),
// at (standing at an event), play (a playback runs).
const (
	modeLive = "live"
	modeAt   = "at"
	modePlay = "play"
)

// pageSignals are the Datastar signals a session page sends with each
// request: where it stands (ttAt, -1 live) and its mode.
type pageSignals struct {
	At   *int64 `json:"ttAt"`
	Mode string `json:"ttMode"`
}

// signalsOf reads the page's signals; a request without them (a plain
// client) has none.
func signalsOf(c echo.Context) (pageSignals, error) {
	var sig pageSignals
	if err := datastar.ReadSignals(c.Request(), &sig); err != nil {
		return sig, core.Errorf(core.CodeInvalid, "the datastar parameter is not the page's signals (a JSON object): %v", err)
	}
	return sig, nil
}

// replaying reports whether the page stands at an event or plays.
func (s pageSignals) replaying() bool {
	return s.At != nil && *s.At >= 0 || s.Mode == modeAt || s.Mode == modePlay
}

// held returns the seq the page holds: its ttAt signal, else ?from=, else
// -1 (live).
func held(c echo.Context, sig pageSignals) (int64, error) {
	if sig.At != nil {
		return max(*sig.At, -1), nil
	}
	if raw := c.QueryParam("from"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < -1 {
			return 0, core.Errorf(core.CodeInvalid, "from must be the seq the page holds (-1 for live), not %q", raw)
		}
		return n, nil
	}
	return -1, nil
}

// placeOf reads the session page's target (views.ParsePlace).
func placeOf(c echo.Context) (views.Place, error) { return views.ParsePlace(c.QueryParams()) }

// lastSeqOf returns the seq of a log's last event, -1 for an empty log.
func lastSeqOf(events []core.Event) int64 {
	if len(events) == 0 {
		return -1
	}
	return events[len(events)-1].Seq
}

// replaySource is what a replay reads: a session's log as its reader may
// see it, and the reader's URLs — the owner's session (ownerSource), or a
// share link's scope, redacted (shareSource).
type replaySource struct {
	key   string // the chapter cache's key
	links views.Links
	// load returns the header and the events the reader may see.
	load func(ctx context.Context) (core.SessionHeader, []core.Event, error)
	// after returns the events after seq the reader may see as the session
	// goes on; nil when the source ends with what load returns (a share
	// link). A playback that reaches its end then follows the session
	// live (the owner's hub).
	after func(ctx context.Context, seq int64) ([]core.Event, error)
	// follow says the reader's page may follow the session live (on the
	// page's own stream) once a playback through a source without after
	// has reached its end.
	follow bool
	// reader is what the pages show: ReadOnly, the reader may not decide
	// the session's approvals, even
	// live (a share link, a session this server does not run). Whatever
	// the source, a page at an event and a playback are read-only.
	reader views.Reader
}

// ownerSource is session id as its owner reads it.
func (s *Server) ownerSource(id string) replaySource {
	return replaySource{
		key:   id,
		links: views.SessionLinks(id),
		load: func(ctx context.Context) (core.SessionHeader, []core.Event, error) {
			return s.deps.Sessions.LoadSession(ctx, id)
		},
		after: func(ctx context.Context, seq int64) ([]core.Event, error) {
			return s.deps.Sessions.EventsAfter(ctx, id, seq)
		},
		follow: s.deps.Commits != nil,
		reader: s.ownerReader(id),
	}
}

// ownerFold folds a log for a page of the owner's that sets no reader of
// its own (an export, a call's page or files): with the server's memo of
// highlighted code.
func (s *Server) ownerFold(h core.SessionHeader, events []core.Event) *views.Timeline {
	t := views.Fold(h, events, s.deps.Presenter)
	t.SetReader(views.Reader{Highlights: s.highlights})
	return t
}

// ownerReader is what the owner's pages of session id show, whichever
// path builds them (the live hub, a page at an event, a playback): the
// only place the owner's price table reaches a page.
func (s *Server) ownerReader(id string) views.Reader {
	ns := s.sessionNotes(id)
	return views.Reader{ReadOnly: !s.canDecide(id), Prices: s.deps.Prices, Notes: ns, Labels: s.deps.Notes != nil, LabelChoices: s.deps.Labels,
		Children: s.sessionChildren(id, ns), Ancestors: s.ancestors(id), Fork: s.canFork(), Forks: s.forkLinks(context.Background(), id),
		Highlights: s.highlights}
}

// childCache keeps the logs of nested children, each with its fold: a
// parent's pages and hubs read their children on every render of their
// reader; a child that did not move is neither loaded nor folded again,
// and one that moved reads and folds only its new events
// (views.ChildLog.Extend).
type childCache struct {
	mu sync.Mutex
	m  map[string]*views.ChildLog
}

// forget drops child's log (its log was replaced: it is loaded afresh).
func (c *childCache) forget(child string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, child)
}

// maxCachedChildren bounds childCache (past it, it starts over).
const maxCachedChildren = 256

// childLog returns child's log (nil when it cannot be read: deleted, say).
func (s *Server) childLog(child string) *views.ChildLog {
	c, err := s.readChild(child)
	if err != nil {
		if core.ErrorCode(err) != core.CodeNotFound {
			s.log.Warn("child not read", logkey.SessionID, child, logkey.Err, err)
		}
		return nil
	}
	return c
}

// readChild returns child's log: the cached one, extended by the events
// it lacks, or the whole log. A deleted child is core.CodeNotFound.
func (s *Server) readChild(child string) (*views.ChildLog, error) {
	ctx := context.Background()
	sum, err := s.deps.Sessions.Summary(ctx, child)
	if err != nil {
		return nil, err
	}
	s.children.mu.Lock()
	c := s.children.m[child]
	s.children.mu.Unlock()
	if c != nil {
		switch last := c.LastSeq(); {
		case last == sum.LastSeq:
			return c, nil
		case last < sum.LastSeq:
			more, err := s.deps.Sessions.EventsAfter(ctx, child, last)
			if err == nil && c.Extend(more) {
				return c, nil
			}
		}
	}
	h, events, err := s.deps.Sessions.LoadSession(ctx, child)
	if err != nil {
		return nil, err
	}
	c = &views.ChildLog{Header: h, Events: events}
	s.children.mu.Lock()
	if s.children.m == nil || len(s.children.m) >= maxCachedChildren {
		s.children.m = map[string]*views.ChildLog{}
	}
	s.children.m[child] = c
	s.children.mu.Unlock()
	return c, nil
}

// ancestors returns session id's parent, its parent's parent and so on
// (at most maxAncestors), root first; nil for a session that is no child.
func (s *Server) ancestors(id string) []string {
	const maxAncestors = 16
	var out []string
	seen := map[string]bool{id: true}
	for range maxAncestors {
		sum, err := s.deps.Sessions.Summary(context.Background(), id)
		if err != nil || sum.ParentID == "" || seen[sum.ParentID] {
			break
		}
		id = sum.ParentID
		seen[id] = true
		out = append(out, id)
	}
	slices.Reverse(out)
	return out
}

// sessionChildren loads the logs of the children that session id's link
// notes name (a child that cannot be loaded is left out: its card says
// "child not found"), and has the broker tell id's hubs when one of them
// commits, so the parent's page shows its children live over its own
// stream.
func (s *Server) sessionChildren(id string, ns []notes.Note) map[string]*views.ChildLog {
	out := map[string]*views.ChildLog{}
	var ids []string
	for _, n := range ns {
		if n.Kind != notes.KindLink {
			continue
		}
		d, err := notes.ParseLink(n.Data)
		if err != nil || out[d.Child] != nil {
			continue
		}
		ids = append(ids, d.Child)
		if c := s.childLog(d.Child); c != nil {
			out[d.Child] = c
		}
	}
	s.broker.watchChildren(id, ids)
	return out
}

// sessionNotes reads every note of session id, removed ones included (a
// page shows those that apply at the seq it shows); none without a note
// store or when they cannot be read (logged: the page shows no labels).
func (s *Server) sessionNotes(id string) []notes.Note {
	if s.deps.Notes == nil {
		return nil
	}
	ns, err := s.deps.Notes.Notes(context.Background(), id, notes.Query{Removed: true})
	if err != nil {
		if core.ErrorCode(err) != core.CodeNotFound {
			s.log.Warn("notes not read", logkey.SessionID, id, logkey.Err, err)
		}
		return nil
	}
	return ns
}

// foldOf folds events of the source's session as its reader sees them.
func (s *Server) foldOf(src replaySource, h core.SessionHeader, events []core.Event) *views.Timeline {
	t := views.Fold(h, events, s.deps.Presenter)
	t.SetReader(src.reader)
	return t
}

// replayOf folds the source's log at at, reusing its cached chapters.
func (s *Server) replayOf(src replaySource, h core.SessionHeader, events []core.Event, at int64) *views.Replay {
	return s.chapters.replay(src.key, h, events, at, s.deps.Presenter, src.reader)
}

// handleSession handles GET /sessions/:id: the inspector, live or at an
// event (?at=), around a target (?call=, ?card=, ?event=).
func (s *Server) handleSession(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	p, err := placeOf(c)
	if err != nil {
		return err
	}
	v, err := s.sessionPage(c, id, p)
	if err != nil {
		return err
	}
	if key := c.QueryParam(views.ParamShared); key != "" && v.Share != nil {
		// The page a share form's POST redirected to: the new link, once.
		c.Response().Header().Set("Cache-Control", "no-store")
		if v.Share.Created = s.created.take(id, key, s.now()); v.Share.Created != nil {
			if rep, err := s.preview(c, id, nil); err == nil {
				v.Share.Preview = views.NewSharePreview(rep, nil, true)
			}
		}
	}
	return s.render(c, http.StatusOK, views.SessionPage(v))
}

// sessionPage builds the owner's inspector page of session id at its ?at=
// around p, with its share panel (which offers to share up to the event
// the page stands at).
func (s *Server) sessionPage(c echo.Context, id string, p views.Place) (*views.SessionPageView, error) {
	v, r, err := s.replayPage(c, s.ownerSource(id), s.deps.Commits != nil, p)
	if err != nil {
		return nil, err
	}
	s.sourceLine(c.Request().Context(), id, v)
	v.Meta = s.meta(v.Head.Title)
	v.CanRun = s.owns(id)
	if v.Share, err = s.sharePanel(c, id, r.T.LastSeq()); err != nil {
		return nil, err
	}
	v.Delete = s.deletePanel(id, v.Head.Live, v.Share)
	v.CompareURL = views.ComparePickURL(id)
	return v, nil
}

// replayPage builds the session page of src at the request's ?at= around
// p (live: the page may follow the session).
func (s *Server) replayPage(c echo.Context, src replaySource, live bool, p views.Place) (*views.SessionPageView, *views.Replay, error) {
	h, events, err := src.load(c.Request().Context())
	if err != nil {
		return nil, nil, err
	}
	at, err := views.ParseAt(c.QueryParam(views.ParamAt), lastSeqOf(events))
	if err != nil {
		return nil, nil, err
	}
	r := s.replayOf(src, h, events, at)
	v, err := views.NewReplayPageFor(views.PageMeta{}, r, src.links, s.tune.Window, live, p)
	return v, r, err
}

// loader reads what a transcript loader needs: the seq the page holds
// (its signals) and the source's fold at it.
func (s *Server) loader(c echo.Context, src replaySource) (int64, *views.Timeline, error) {
	sig, err := signalsOf(c)
	if err != nil {
		return 0, nil, err
	}
	at, err := held(c, sig)
	if err != nil {
		return 0, nil, err
	}
	h, events, err := src.load(c.Request().Context())
	if err != nil {
		return 0, nil, err
	}
	if at >= 0 {
		events = events[:views.EventsThrough(events, at)]
	}
	t := s.foldOf(src, h, events)
	if at >= 0 {
		t.SetReadOnly(true)
	}
	return at, t, nil
}

// handleEarlier handles GET /sessions/:id/earlier?before=SEQ.
func (s *Server) handleEarlier(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	return s.earlier(c, s.ownerSource(id))
}

// earlier answers a Datastar request with one patch that fills the
// "earlier" placeholder before ?before=SEQ, rendered at the seq the page
// holds.
func (s *Server) earlier(c echo.Context, src replaySource) error {
	before, err := strconv.ParseInt(c.QueryParam("before"), 10, 64)
	if err != nil {
		return core.Errorf(core.CodeInvalid, "before must be a seq")
	}
	at, t, err := s.loader(c, src)
	if err != nil {
		return err
	}
	e := views.LoadEarlierAt(t, src.links, before, s.tune.Window, at)
	if e == nil {
		return core.Errorf(core.CodeNotFound, "no transcript segment starts at seq %d", before)
	}
	return s.writeEarlier(c, e)
}

// handleLater handles GET /sessions/:id/later?after=SEQ&until=SEQ.
func (s *Server) handleLater(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	return s.later(c, s.ownerSource(id))
}

// later fills the "later" placeholder with the segments after ?after=
// opened up to ?until=, rendered at the seq the page holds.
func (s *Server) later(c echo.Context, src replaySource) error {
	after, err := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	if err != nil {
		return core.Errorf(core.CodeInvalid, "after must be a seq")
	}
	until, err := strconv.ParseInt(c.QueryParam("until"), 10, 64)
	if err != nil {
		return core.Errorf(core.CodeInvalid, "until must be a seq")
	}
	at, t, err := s.loader(c, src)
	if err != nil {
		return err
	}
	l := views.LoadLater(t, src.links, after, until, s.tune.Window, at)
	if l == nil {
		return core.Errorf(core.CodeNotFound, "no transcript segment starts at seq %d", after)
	}
	return s.patchOne(c, views.Later(l))
}

// patchOne answers a Datastar request with one outer morph of comp.
func (s *Server) patchOne(c echo.Context, comp templ.Component) error {
	ctx := c.Request().Context()
	html, err := views.Render(ctx, comp)
	if err != nil {
		return err
	}
	startSSE(c)
	if _, err := c.Response().Write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, "")); err != nil {
		s.log.DebugContext(ctx, "patch not sent", logkey.Err, err)
	}
	return nil
}

// stepOf reads ?step= (views.ParseStep).
func stepOf(c echo.Context) (string, int, error) { return views.ParseStep(c.QueryParam("step")) }

// incrementalSteps bounds a forward move sent as the live path's frames
// (from the seq the page holds); a longer one re-renders the page.
const incrementalSteps = 200

// handleSeek handles GET /sessions/:id/seek: a move of the replay
// transport, requested on the page's stream element (so it stops a
// playback or the live stream) and answered with patches. ?at=N (with
// ?call=, ?card= or ?event=: the window around that target) moves to event
// N; ?step=KIND± moves one step by event, call, chapter mark, error or turn
// from the seq the page holds (its ttAt signal, or ?from=); with neither
// the page stays where it is (pause). A short move forward is sent as the
// frames the live path sends for those events; any other move re-renders
// the header, the transcript and the transport at the new seq.
func (s *Server) handleSeek(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	return s.seek(c, s.ownerSource(id))
}

// seek answers a move of src's replay (handleSeek).
func (s *Server) seek(c echo.Context, src replaySource) error {
	ctx := c.Request().Context()
	p, err := placeOf(c)
	if err != nil {
		return err
	}
	kind, dir, err := stepOf(c)
	if err != nil {
		return err
	}
	sig, err := signalsOf(c)
	if err != nil {
		return err
	}
	from, err := held(c, sig)
	if err != nil {
		return err
	}
	rawAt := c.QueryParam(views.ParamAt)
	if kind == "" && rawAt == "" {
		// Pause: the page stays at the seq it holds.
		startSSE(c)
		s.newStreamConn(c).write(positionFrame(from, modeOf(from)))
		return nil
	}
	h, events, err := src.load(ctx)
	if err != nil {
		return err
	}
	cached, ok := s.chapters.lookup(src.key, events)
	var r *views.Replay
	if !ok {
		r = views.NewReplay(h, events, -1, s.deps.Presenter, src.reader)
		s.chapters.store(src.key, events, r)
		cached.ch, cached.running = r.Chapters, r.Running
	}
	of := lastSeqOf(events)
	target := from
	switch {
	case kind != "":
		seq, m, ok := cached.ch.Step(from, kind, dir)
		if !ok {
			startSSE(c)
			s.newStreamConn(c).write(positionFrame(from, modeOf(from)))
			return nil
		}
		target = seq
		if m != nil && !p.Targets() {
			p.Card = m.Card
		}
	default:
		if target, err = views.ParseAt(rawAt, of); err != nil {
			return err
		}
		if target < 0 {
			target = of
		}
	}
	if from >= 0 && target > from && target-from <= incrementalSteps && !p.Targets() {
		startSSE(c)
		s.playback(ctx, s.newStreamConn(c), src, from, playback{until: target})
		return nil
	}
	if r == nil {
		r = views.NewReplayOf(h, events, target, s.deps.Presenter, src.reader, cached.ch, cached.running)
	} else {
		r.Move(events, target)
	}
	frame, err := s.pageAt(ctx, r, src.links, p)
	if err != nil {
		return err
	}
	startSSE(c)
	if _, err := c.Response().Write(frame); err != nil {
		s.log.DebugContext(ctx, "seek not sent", logkey.Err, err)
	}
	return nil
}

// pageAt renders a replay's page as a move answers it: one morph of its
// header, transcript window and transport, around the target p names, then
// the page's new position (signals).
func (s *Server) pageAt(ctx context.Context, r *views.Replay, l views.Links, p views.Place) ([]byte, error) {
	v, err := views.NewReplayPageFor(views.PageMeta{}, r, l, s.tune.Window, false, p)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, comp := range []templ.Component{views.SessionHead(&v.Head), views.Transcript(v), views.Transport(v.Transport)} {
		if i > 0 {
			b.WriteByte('\n')
		}
		if err := comp.Render(ctx, &b); err != nil {
			return nil, err
		}
	}
	return append(formatPatches([]views.Patch{{Mode: "outer", HTML: b.String()}}, ""), positionFrame(r.At, modeOf(r.At))...), nil
}

// openLive brings a page that stood at an event to src's live page as a
// fresh load renders it — its header, the latest transcript window (the
// waiting cards' decision forms included, when the reader may decide) and
// the transport — and tells it that it is live. It returns the seq the
// page now shows through, and whether the stream is still open.
func (s *Server) openLive(ctx context.Context, w *streamConn, src replaySource) (int64, bool) {
	h, events, err := src.load(ctx)
	if err == nil {
		var frame []byte
		if frame, err = s.livePage(ctx, src, h, events); err == nil {
			return lastSeqOf(events), w.write(frame)
		}
	}
	if ctx.Err() == nil {
		s.log.ErrorContext(ctx, "stream: going live failed", logkey.SessionID, src.key, logkey.Err, err)
		w.fail("live updates unavailable: " + streamMessageOf(err, src.links.Shared()) + ". Reload to retry.")
	}
	return -1, false
}

// livePage renders src's live page over events as one morph of its
// header, latest window and transport, then the page's live position.
func (s *Server) livePage(ctx context.Context, src replaySource, h core.SessionHeader, events []core.Event) ([]byte, error) {
	v, err := views.NewReplayPageFor(views.PageMeta{}, s.replayOf(src, h, events, -1), src.links, s.tune.Window, true, views.LivePlace())
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, comp := range []templ.Component{views.SessionHead(&v.Head), views.Transcript(v), views.Transport(v.Transport)} {
		if i > 0 {
			b.WriteByte('\n')
		}
		if err := comp.Render(ctx, &b); err != nil {
			return nil, err
		}
	}
	// The morph carries the last seq as its id: a stream resumed after it
	// asks for what came later.
	id := strconv.FormatInt(lastSeqOf(events), 10)
	return append(formatPatches([]views.Patch{{Mode: "outer", HTML: b.String()}}, id), positionFrame(-1, modeLive)...), nil
}

func modeOf(at int64) string {
	if at < 0 {
		return modeLive
	}
	return modeAt
}

// playback is what the page's stream replays: from the seq the page holds
// up to until (< 0: to the end of the log, then live) at speed (0:
// unpaced).
type playback struct {
	speed int
	until int64
	// render has the page first re-rendered at the seq playback starts
	// from (a page that stands elsewhere, e.g. live, replays from there).
	render bool
}

// isPlayback reports whether a stream request asks for a playback.
func isPlayback(c echo.Context) bool {
	return c.QueryParam("speed") != "" || c.QueryParam("until") != ""
}

// playbackOf reads a stream's playback parameters: ?speed= (1, 10 or 50)
// and ?until=; nil for the live stream.
func playbackOf(c echo.Context) (*playback, error) {
	rawSpeed, rawUntil := c.QueryParam("speed"), c.QueryParam("until")
	if rawSpeed == "" && rawUntil == "" {
		return nil, nil
	}
	pb := &playback{until: -1, render: c.QueryParam("render") != ""}
	if rawSpeed != "" {
		n, err := strconv.Atoi(rawSpeed)
		ok := err == nil
		if ok {
			ok = false
			for _, sp := range views.Speeds() {
				ok = ok || n == sp
			}
		}
		if !ok {
			return nil, core.Errorf(core.CodeInvalid, "speed must be one of 1, 10 or 50, not %s", views.QuoteInput(rawSpeed))
		}
		pb.speed = n
	}
	if rawUntil != "" {
		n, err := strconv.ParseInt(rawUntil, 10, 64)
		if err != nil || n < 0 {
			return nil, core.Errorf(core.CodeInvalid, "until must be an event's seq (a whole number from 0), not %s", views.QuoteInput(rawUntil))
		}
		pb.until = n
	}
	return pb, nil
}

// positionFrame is the SSE event that tells the page where it stands.
func positionFrame(at int64, mode string) []byte {
	w := &bufWriter{h: http.Header{}}
	sse := datastar.NewSSE(w, formatRequest)
	_ = sse.MarshalAndPatchSignals(map[string]any{"ttAt": at, "ttMode": mode}) // to memory: cannot fail
	return w.buf.Bytes()
}

// playback plays session id's log after the seq the page holds (cursor)
// on w: each event goes through the same fold and coalescing as on the
// live path (views.Coalescer, renderFrame, an id-only frame for an event
// that changes nothing), so the page receives the very frames the live
// path sent (read-only: a waiting card shows no decision form while
// played back), each followed by its new position (the ttAt signal). It is
// paced by the events' times at pb.speed, idle gaps over
// Tuning.PlaybackIdle compressed to it, or unpaced. It stops after
// pb.until (done), or returns the seq it reached when it has played the
// whole log (not done): the caller follows the session live from there.
func (s *Server) playback(ctx context.Context, w *streamConn, src replaySource, cursor int64, pb playback) (int64, bool) {
	fail := func(err error) (int64, bool) {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "playback failed", logkey.After, cursor, logkey.Err, err)
			w.fail("playback stopped: " + streamMessageOf(err, src.links.Shared()) + ". Reload to retry.")
		}
		return cursor, true
	}
	hdr, events, err := src.load(ctx)
	if err != nil {
		return fail(err)
	}
	i := views.EventsThrough(events, cursor)
	tl := s.foldOf(src, hdr, events[:i])
	// A playback shows past events: no decision forms (a page that goes
	// live at its end gets its waiting cards' forms, awaitingFrame).
	tl.SetReadOnly(true)
	mode := modeAt
	if pb.speed > 0 {
		mode = modePlay
	}
	if pb.render {
		frame, err := s.pageAt(ctx, s.replayOf(src, hdr, events, cursor), src.links, views.LivePlace())
		if err != nil {
			return fail(err)
		}
		if !w.write(frame) {
			return cursor, true
		}
	}
	if !w.write(positionFrame(cursor, mode)) {
		return cursor, true
	}
	var prev int64
	if i > 0 {
		prev = events[i-1].Time
	} else if len(events) > 0 {
		prev = events[0].Time
	}
	co := views.Coalescer{Off: s.tune.Coalesce < 0}
	var buf []byte
	var werr error
	emit := func(u views.Update) error {
		buf = buf[:0]
		if u.Empty() {
			buf = append(buf, idOnly(u.Seq)...)
		} else {
			data, err := renderFrameFor(ctx, tl, src.links, u)
			if err != nil {
				werr = err
				return err
			}
			buf = append(buf, data...)
		}
		buf = append(buf, positionFrame(u.Seq, mode)...)
		if !w.write(buf) {
			werr = context.Canceled
			return werr
		}
		cursor = u.Seq
		return nil
	}
	for {
		for ; i < len(events); i++ {
			e := &events[i]
			if pb.until >= 0 && e.Seq > pb.until {
				break
			}
			if pb.speed > 0 {
				gap := time.Duration(min(max(e.Time-prev, 0), s.tune.PlaybackIdle.Milliseconds())) * time.Millisecond / time.Duration(pb.speed)
				if gap > 0 {
					if gap >= s.tune.Coalesce && co.Flush(emit) != nil {
						break
					}
					if !s.wait(ctx, gap) {
						return cursor, true
					}
				}
			}
			prev = e.Time
			if co.Apply(tl, e, emit) != nil {
				break
			}
		}
		if werr == nil {
			_ = co.Flush(emit)
		}
		switch {
		case werr == context.Canceled:
			return cursor, true
		case werr != nil:
			return fail(werr)
		case pb.until >= 0 && (i < len(events) || tl.LastSeq() >= pb.until):
			w.write(positionFrame(cursor, modeAt))
			return cursor, true
		}
		if src.after == nil {
			// The source ends here (a link scoped up to an event).
			w.write(positionFrame(cursor, modeAt))
			return cursor, true
		}
		more, err := src.after(ctx, tl.LastSeq())
		if err != nil {
			return fail(err)
		}
		if len(more) == 0 {
			return cursor, false
		}
		events, i = more, 0
	}
}

// awaitingFrame is the morph that gives a page going live from cursor —
// whose cards were rendered read-only, at an event or by a playback — the
// decision forms of the cards that wait at cursor; nil when none waits or
// the reader may not decide.
func (s *Server) awaitingFrame(ctx context.Context, src replaySource, cursor int64) ([]byte, error) {
	if src.reader.ReadOnly {
		return nil, nil
	}
	h, events, err := src.load(ctx)
	if err != nil {
		return nil, err
	}
	t := s.foldOf(src, h, events[:views.EventsThrough(events, cursor)])
	patches, err := views.RenderAwaitingFor(ctx, t, src.links)
	if err != nil || patches == nil {
		return nil, err
	}
	return formatPatches(patches, ""), nil
}

// waitFor waits d, or until ctx is done (false).
func waitFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
