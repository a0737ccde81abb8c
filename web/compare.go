package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/compare"
	"prism/core/logkey"
	"prism/views"
)

// compareRerender is the least time between two renders of a live
// comparison: a burst of commits on either session is one re-render.
const compareRerender = 500 * time.Millisecond

// comparison reads sessions a and b and aligns their calls; it also
// returns each side's last seq (the stream's cursor). A missing session is
// core.CodeNotFound naming it.
func (s *Server) comparison(ctx context.Context, a, b string) (*views.ComparePageView, [2]int64, error) {
	c, status, seqs, err := s.compareSessions(ctx, a, b)
	if err != nil {
		return nil, seqs, err
	}
	return views.NewComparePage(s.meta("compare "+short(a)+" · "+short(b)), c, status[0], status[1]), seqs, nil
}

// compareSessions folds sessions a and b as their pages do and aligns
// their calls; it returns each side's status and last seq too.
func (s *Server) compareSessions(ctx context.Context, a, b string) (*compare.Comparison, [2]string, [2]int64, error) {
	var seqs [2]int64
	var sides [2]compare.Side
	var status [2]string
	for i, id := range []string{a, b} {
		if i == 1 && b == a {
			sides[1], status[1], seqs[1] = sides[0], status[0], seqs[0]
			break
		}
		h, events, err := s.deps.Sessions.LoadSession(ctx, id)
		if err != nil {
			return nil, status, seqs, err
		}
		t := views.Fold(h, events, s.deps.Presenter)
		sides[i], status[i], seqs[i] = views.CompareSide(id, t, s.deps.Prices), t.Summary().Status, t.LastSeq()
	}
	return compare.Compare(sides[0], sides[1], compare.Options{}), status, seqs, nil
}

// handleAPICompare handles GET /api/compare/:a/:b: the comparison as
// JSON, as prism compare --json prints it (both sessions' totals, every
// pair with both calls, the count of differences, the notes).
func (s *Server) handleAPICompare(c echo.Context) error {
	a, b, err := compareIDs(c)
	if err != nil {
		return err
	}
	cmp, _, _, err := s.compareSessions(c.Request().Context(), a, b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cmp)
}

// compareIDs reads the two session ids of a compare route.
func compareIDs(c echo.Context) (a, b string, err error) {
	if a, err = param(c, "a"); err != nil {
		return "", "", err
	}
	if b, err = param(c, "b"); err != nil {
		return "", "", err
	}
	return a, b, nil
}

// handleCompare handles GET /compare/:a/:b: the two sessions side by
// side, aligned call by call. An unknown session is a 404 naming it.
func (s *Server) handleCompare(c echo.Context) error {
	a, b, err := compareIDs(c)
	if err != nil {
		return err
	}
	v, seqs, err := s.comparison(c.Request().Context(), a, b)
	if err != nil {
		return err
	}
	if s.deps.Commits != nil {
		v.StreamURL = views.CompareStreamURL(a, b) + "?a=" + strconv.FormatInt(seqs[0], 10) + "&b=" + strconv.FormatInt(seqs[1], 10)
	}
	return s.render(c, http.StatusOK, views.ComparePage(v))
}

// handleComparePick handles GET /compare?a=ID[&b=ID]: with both ids it
// redirects to their comparison, with a alone it lists the sessions to
// compare a with.
func (s *Server) handleComparePick(c echo.Context) error {
	ctx := c.Request().Context()
	a, b := strings.TrimSpace(c.QueryParam("a")), strings.TrimSpace(c.QueryParam("b"))
	if a == "" {
		return core.Errorf(core.CodeInvalid, "a (the session to compare) is required: /compare?a=ID")
	}
	sa, err := s.deps.Sessions.Summary(ctx, a)
	if err != nil {
		return err
	}
	if b != "" {
		return c.Redirect(http.StatusSeeOther, views.CompareURL(a, b))
	}
	sums, err := s.deps.Sessions.ListSessions(ctx, ListQuery{Limit: listLimit})
	if err != nil {
		return err
	}
	v := &views.ComparePickView{Meta: s.meta("compare " + short(a)), A: a, Title: sa.Title}
	if v.Title == "" {
		v.Title = a
	}
	for i := range sums {
		if sums[i].ID != a {
			v.Candidates = append(v.Candidates, rowView(&sums[i], nil))
		}
	}
	return s.render(c, http.StatusOK, views.ComparePickPage(v))
}

// handleCompareStreamHead answers HEAD on the compare stream: the headers
// it starts with, or 404 naming a session that does not exist.
func (s *Server) handleCompareStreamHead(c echo.Context) error {
	a, b, err := compareIDs(c)
	if err != nil {
		return err
	}
	for _, id := range []string{a, b} {
		if _, err := s.deps.Sessions.Summary(c.Request().Context(), id); err != nil {
			return err
		}
	}
	return s.handleStreamHead(c)
}

// handleCompareStream handles GET /compare/:a/:b/stream?a=SEQ&b=SEQ: the
// compare page's SSE stream. It follows both sessions' hubs (the owner's
// live folds) and, whenever either has committed past what the page
// shows, reads both logs again and morphs #compare with the new
// comparison — at most once per compareRerender.
func (s *Server) handleCompareStream(c echo.Context) error {
	ctx := c.Request().Context()
	a, b, err := compareIDs(c)
	if err != nil {
		return err
	}
	var shown [2]int64
	for i, k := range []string{"a", "b"} {
		shown[i] = -1
		if q := c.QueryParam(k); q != "" {
			if shown[i], err = strconv.ParseInt(q, 10, 64); err != nil {
				return core.Errorf(core.CodeInvalid, "%s must be the last seq the page shows, not %q", k, q)
			}
		}
	}
	for _, id := range []string{a, b} {
		if _, err := s.deps.Sessions.Summary(ctx, id); err != nil {
			return err // before the stream opens: an ordinary error response
		}
	}
	release, err := s.takeStreamSlot(c)
	if err != nil {
		return err
	}
	defer release()
	startSSE(c)
	w := s.newStreamConn(c)
	ids := []string{a, b}
	if a == b {
		ids = ids[:1]
	}
	hubs := make([]*hub, len(ids))
	subs := make([]*subscriber, len(ids))
	for i, id := range ids {
		h, sub, _, err := s.broker.subscribe(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "compare stream: subscribe failed", logkey.SessionID, id, logkey.Err, err)
				w.fail("live updates unavailable: " + messageOf(err, statusOf(err)) + ". Reload to retry.")
			}
			return nil
		}
		defer s.broker.unsubscribe(h, sub)
		hubs[i], subs[i] = h, sub
	}
	if len(ids) == 1 {
		hubs, subs = append(hubs, hubs[0]), append(subs, subs[0])
	}
	// The page is stale while a hub has folded past what it shows
	// (or its log was replaced: its generation moved).
	var gens, shownGens [2]int
	sync := func() bool {
		stale := false
		for i := range 2 {
			to, gen := hubs[i].resync(subs[i])
			if to > shown[i] || gen != shownGens[i] {
				stale = true
			}
			gens[i] = gen
		}
		return stale
	}
	render := func() bool {
		v, seqs, err := s.comparison(ctx, a, b)
		if err == nil {
			var html string
			if html, err = views.Render(ctx, views.CompareBody(v)); err == nil {
				shown, shownGens = seqs, gens
				return w.write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""))
			}
		}
		if ctx.Err() == nil {
			// A missing session's error names it ("session b not found").
			s.log.ErrorContext(ctx, "compare stream: re-render failed", logkey.SessionID, a, logkey.Err, err)
			w.fail("live updates stopped: " + messageOf(err, statusOf(err)) + ". Reload to retry.")
		}
		return false
	}
	for i := range 2 {
		shownGens[i] = subs[i].gen
	}
	if sync() && !render() {
		return nil
	}
	ka := time.NewTicker(s.tune.KeepAlive)
	defer ka.Stop()
	var wait <-chan time.Time // armed while a re-render waits its turn
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hubs[0].ctx.Done():
			hubStopped(w, hubs[0])
			return nil
		case <-hubs[1].ctx.Done():
			hubStopped(w, hubs[1])
			return nil
		case <-ka.C:
			if !w.write([]byte(": keep-alive\n\n")) {
				return nil
			}
			continue
		case <-subs[0].ch:
		case <-subs[0].kick:
		case <-subs[1].ch:
		case <-subs[1].kick:
		case <-wait:
			wait = nil
		}
		if !sync() && wait == nil {
			continue
		}
		if d := compareRerender - time.Since(last); d > 0 {
			if wait == nil {
				wait = time.After(d)
			}
			continue
		}
		if !render() {
			return nil
		}
		last = time.Now()
	}
}

// hubStopped tells a compare page why one of its sessions stopped being
// followed: the session went (deleted), or the server is shutting down.
func hubStopped(w *streamConn, h *hub) {
	switch err := h.stopErr(); {
	case core.ErrorCode(err) == core.CodeNotFound:
		w.fail("live updates stopped: session " + h.id + " was deleted.")
		return
	case err != nil:
		w.fail("live updates stopped: " + messageOf(err, statusOf(err)) + ". Reload to retry.")
		return
	}
	w.fail(stoppedMessage)
}
