package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/views"
)

// cursorOf returns the seq a stream resumes after: Last-Event-ID on a
// retry, else ?after= from the page, else -1 (everything). A cursor that is
// not a seq (an integer of at least -1) is refused: replaying from the
// start would duplicate what the page shows.
func cursorOf(c echo.Context) (int64, error) {
	parse := func(what, v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return 0, core.Errorf(core.CodeInvalid, "%s must be a seq (an integer, -1 or more), not %q", what, v)
		}
		return n, nil
	}
	if v := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID")); v != "" {
		return parse("Last-Event-ID", v)
	}
	if v, ok := c.QueryParams()["after"]; ok {
		return parse("after", strings.Join(v, ","))
	}
	return -1, nil
}

// admitStream checks what a session stream is asked to resume from and
// takes its client's stream slot (Tuning.MaxStreamsPerClient); release
// gives the slot back.
func (s *Server) admitStream(c echo.Context) (cursor int64, release func(), err error) {
	if cursor, err = cursorOf(c); err != nil {
		return 0, nil, err
	}
	if release, err = s.takeStreamSlot(c); err != nil {
		return 0, nil, err
	}
	return cursor, release, nil
}

// handleStreamHead answers HEAD on a stream route: the headers a stream
// starts with (404 for a session that does not exist), no stream.
func (s *Server) handleStreamHead(c echo.Context) error {
	if c.Param("id") != "" {
		id, err := param(c, "id")
		if err != nil {
			return err
		}
		if _, err := s.deps.Sessions.Summary(c.Request().Context(), id); err != nil {
			return err
		}
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return c.NoContent(http.StatusOK)
}

// stoppedMessage is what an open stream reports when the server stops its
// live path (Server.Close).
const stoppedMessage = "live updates stopped: the server is shutting down. Reload to retry."

// streamConn writes frames to one SSE response, each write under its own
// deadline (Tuning.WriteTimeout): a client that stops reading gets its
// stream closed once its buffers are full, instead of holding the stream's
// goroutine and queue forever.
type streamConn struct {
	c       echo.Context
	rc      *http.ResponseController
	timeout time.Duration
	log     *slog.Logger
	failed  bool
}

func (s *Server) newStreamConn(c echo.Context) *streamConn {
	// The controller of net/http's writer itself: echo.Response.Flush
	// swallows a failed flush, which is how a stalled client shows.
	return &streamConn{c: c, rc: http.NewResponseController(c.Response().Writer), timeout: s.tune.WriteTimeout, log: s.log}
}

func (w *streamConn) write(parts ...[]byte) bool {
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	if n == 0 {
		return true
	}
	if w.failed {
		return false
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) // ErrNotSupported under a recorder is fine
	var err error
	for _, b := range parts {
		if _, err = w.c.Response().Write(b); err != nil {
			break
		}
	}
	if err == nil {
		err = w.rc.Flush()
	}
	if err != nil {
		w.failed = true
		w.log.Debug(StreamWriteFailed, append(requestAttrs(w.c), logkey.Err, err)...)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The reader stopped reading: its queue was bounded
			// (maxQueuedBytes) and it is dropped now, with the reason.
			w.log.Info(StreamReaderDropped, append(requestAttrs(w.c), logkey.Duration, w.timeout)...)
		}
		return false
	}
	return true
}

// StreamReaderDropped is the message logged (at info level) when a stream
// is dropped because its client read nothing for Tuning.WriteTimeout.
const StreamReaderDropped = "stream: reader dropped: it read nothing for the write timeout"

// StreamWriteFailed is the message logged (at debug level) when a stream
// ends because its client stopped reading or went away.
const StreamWriteFailed = "stream: write failed; the stream ends"

// fail reports an error inside an open stream.
func (w *streamConn) fail(msg string) {
	html, err := views.Render(context.Background(), streamStatus(msg))
	if err == nil {
		w.write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""))
	}
}

func streamStatus(msg string) templ.Component {
	return views.StreamStatus(msg)
}

// handleSessionStream handles GET /sessions/:id/stream: the inspector's SSE
// stream. It first sends exactly the events after the page's cursor
// (Last-Event-ID, else ?after=), rendered from the log, then goes live.
// Each patch group carries its last seq as the event id.
func (s *Server) handleSessionStream(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	sum, err := s.deps.Sessions.Summary(ctx, id)
	if err != nil {
		return err // before the stream opens: an ordinary error response
	}
	cursor, release, err := s.admitStream(c)
	if err != nil {
		return err
	}
	defer release()
	pb, err := playbackOf(c)
	if err != nil {
		return err
	}
	sig, err := signalsOf(c)
	if err != nil {
		return err
	}
	startSSE(c)
	w := s.newStreamConn(c)
	if cursor >= sum.Events {
		// The page claims events the log does not have (the store was
		// replaced under it); patches for those seqs would be skipped.
		w.fail("this page is ahead of the session log (it shows seq " + strconv.FormatInt(cursor, 10) + "): reload it.")
		return nil
	}
	switch {
	case pb != nil:
		var done bool
		if cursor, done = s.playback(ctx, w, s.ownerSource(id), cursor, *pb); done {
			return nil
		}
		// The replay reached the end of the log: the page is live now.
		if !s.goLive(ctx, w, id, cursor) {
			return nil
		}
	case sig.replaying():
		// A page that stood at an event goes live as a fresh load opens
		// the session: the latest window, not every card after the seq it
		// held appended to it (on a long session, thousands).
		var ok bool
		if cursor, ok = s.openLive(ctx, w, s.ownerSource(id)); !ok {
			return nil
		}
	}
	s.follow(ctx, w, ownerView(id), cursor)
	return nil
}

// goLive tells a page that stood at an event or played back that it is
// live from cursor on, with the decision forms of its waiting cards. It
// reports whether the stream is still open.
func (s *Server) goLive(ctx context.Context, w *streamConn, id string, cursor int64) bool {
	frame, err := s.awaitingFrame(ctx, s.ownerSource(id), cursor)
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "stream: going live failed", logkey.SessionID, id, logkey.After, cursor, logkey.Err, err)
			w.fail("live updates unavailable: " + messageOf(err, statusOf(err)) + ". Reload to retry.")
		}
		return false
	}
	return w.write(append(frame, positionFrame(-1, modeLive)...))
}

// follow streams a page of view v live from cursor: first exactly the
// events after it, rendered from the log (one frame, shared by the readers
// that ask for the same range), then the hub's frames. A share link's page
// (v.link) is told when the link stops granting access.
func (s *Server) follow(ctx context.Context, w *streamConn, v view, cursor int64) {
	id := v.session
	h, sub, at, err := s.broker.subscribeView(ctx, v)
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "stream: subscribe failed", logkey.SessionID, id, logkey.Err, err)
			w.fail("live updates unavailable: " + streamMessageOf(err, v.link != nil) + ". Reload to retry.")
		}
		return
	}
	defer s.broker.unsubscribe(h, sub)
	if v.link != nil && cursor > at {
		cursor = at // a link's page cannot be ahead of the log it shows
	}

	failed := func(err error) {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "stream: catch-up failed", logkey.SessionID, id, logkey.After, cursor, logkey.Err, err)
			err = sessionGone(err)
			w.fail("live updates stopped: " + streamMessageOf(err, v.link != nil) + ". Reload to retry.")
		}
	}
	catchUp := func(to int64) bool {
		if to <= cursor {
			return true
		}
		frames, err := h.renderRange(ctx, cursor, to)
		if err != nil {
			failed(err)
			return false
		}
		for _, f := range frames {
			if !w.write(f.data) {
				return false
			}
		}
		cursor = to
		return true
	}
	// resync brings a lagging stream up to the hub: the events it missed,
	// or the whole page when the log was replaced meanwhile.
	// A notes frame it dropped is sent again: the labels as they are now.
	resync := func() bool {
		to, gen := h.resync(sub)
		defer h.sendNotes(sub)
		if gen == sub.gen {
			return catchUp(to)
		}
		data, err := h.renderPageAt(ctx, to)
		if err != nil {
			failed(err)
			return false
		}
		cursor, sub.gen = to, gen
		return w.write(data)
	}
	if !catchUp(at) {
		return
	}
	// The labels as they are now, in order with the frames that follow
	// (a page that reconnected missed what changed meanwhile).
	h.sendNotes(sub)
	ka := time.NewTicker(s.tune.KeepAlive)
	defer ka.Stop()
	var parts [][]byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.ctx.Done(): // the broker closed, the hub failed, or the link ended
			if err := h.stopErr(); errors.Is(err, errLinkEnded) {
				w.fail(shareEndedMessage)
			} else if err != nil {
				w.fail("live updates stopped: " + streamMessageOf(err, v.link != nil) + ". Reload to retry.")
			} else {
				w.fail(stoppedMessage)
			}
			return
		case <-ka.C:
			if !w.write([]byte(": keep-alive\n\n")) {
				return
			}
		case <-sub.kick:
			if !resync() {
				return
			}
		case f := <-sub.ch:
			// Write this frame and any already queued behind it with one
			// flush; the frames' bytes are the hub's, shared by every
			// subscriber, and are written as they are, never copied.
			parts = parts[:0]
			size, lost := 0, false
			for {
				sub.queued.Add(-int64(len(f.data)))
				switch {
				case f.notes:
					// Cards whose labels changed: no seq, no cursor.
					if f.gen == sub.gen {
						parts = append(parts, f.data)
					}
				case f.reset && f.gen > sub.gen:
					// The log was replaced: the page is re-rendered
					// from the new one, and the cursor counts in it.
					parts = append(parts, f.data)
					cursor, sub.gen = f.seq, f.gen
				case f.gen != sub.gen:
					lost = true
				case f.seq <= cursor:
				case f.from == cursor+1:
					parts = append(parts, f.data)
					cursor = f.seq
				default: // a frame straddles the cursor, or frames were lost
					lost = true
				}
				size += len(f.data)
				if lost || size > maxQueuedBytes {
					break
				}
				select {
				case f = <-sub.ch:
					continue
				default:
				}
				break
			}
			ok := w.write(parts...)
			clear(parts) // the frames may be freed as soon as the hub drops them
			if !ok {
				return
			}
			if lost && !resync() {
				return
			}
		}
	}
}

// handleListStream handles GET /stream?q=: the session list's SSE stream.
// On connect it re-sends the whole list body (idempotent), then changed
// rows as they change.
func (s *Server) handleListStream(c echo.Context) error {
	ctx := c.Request().Context()
	q, err := listQuery(c)
	if err != nil {
		return err
	}
	q.Limit = listLimit
	release, err := s.takeStreamSlot(c)
	if err != nil {
		return err
	}
	defer release()
	startSSE(c)
	w := s.newStreamConn(c)
	sub := s.broker.list.subscribe()
	defer s.broker.list.unsubscribe(sub)
	seen := map[string]bool{}
	full := func() bool {
		attn := s.openAttention(ctx)
		sums, err := s.listSessions(ctx, q, attn)
		if err != nil {
			if ctx.Err() == nil {
				w.fail("session list unavailable: " + messageOf(err, statusOf(err)))
			}
			return false
		}
		rows := make([]*views.SessionRowView, len(sums))
		clear(seen)
		forks := s.forkCounts(ctx)
		for i := range sums {
			rows[i] = rowViewWith(&sums[i], s.deps.Prices, attn)
			rows[i].Forks = forks[sums[i].ID]
			seen[sums[i].ID] = true
		}
		html, err := views.Render(ctx, views.SessionRows(rows))
		if err != nil {
			return false
		}
		return w.write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""))
	}
	if !full() {
		return nil
	}
	ka := time.NewTicker(s.tune.KeepAlive)
	defer ka.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.broker.list.done:
			w.fail(stoppedMessage)
			return nil
		case <-ka.C:
			if !w.write([]byte(": keep-alive\n\n")) {
				return nil
			}
		case <-sub.kick:
			for len(sub.ch) > 0 {
				<-sub.ch
			}
			if !full() {
				return nil
			}
		case f := <-sub.ch:
			in, was := matches(q, &f.sum), seen[f.sum.ID]
			if q.Annotated && !was {
				// Labels are not in the summary: a row the annotated
				// list did not show does not join it live.
				in = false
			}
			switch {
			case q.Attention && !f.removed:
				// Whether a row needs attention is not in its summary:
				// the filtered list is sent again.
				if !full() {
					return nil
				}
			case f.removed:
				// A deleted session: its row goes, wherever it was.
				if was {
					delete(seen, f.sum.ID)
					if !w.write(f.morph) {
						return nil
					}
				}
			case !in && !was:
				continue
			case !was && q.Sort == "":
				// Newest first: a row that starts to match goes on top.
				seen[f.sum.ID] = true
				if !w.write(f.prepend) {
					return nil
				}
			case in && was:
				if !w.write(f.morph) {
					return nil
				}
			default:
				// A row that left the filter, or joined an order other
				// than the newest first: the list is sent again.
				if !full() {
					return nil
				}
			}
		}
	}
}
