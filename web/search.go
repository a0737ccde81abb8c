package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/search"
	"prism/views"
)

// Search page sizes: the page shows more hits than the API's default.
const (
	searchPageHits = 50
	apiSearchHits  = 20
	maxSearchHits  = 200
)

func (s *Server) searcher() (Searcher, error) {
	if s.deps.Search == nil {
		return nil, core.Errorf(core.CodeUnavailable, "search is not available on this server")
	}
	return s.deps.Search, nil
}

// searchOptions reads order, cursor and limit.
func searchOptions(c echo.Context, defLimit int) (SearchOptions, error) {
	o := SearchOptions{Order: c.QueryParam(views.ParamOrder), Cursor: c.QueryParam(views.ParamCursor), Limit: defLimit}
	switch o.Order {
	case "", "rank", "time":
	default:
		return o, core.Errorf(core.CodeInvalid, "order must be rank or time, not %q", o.Order)
	}
	if l := c.QueryParam(views.ParamLimit); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxSearchHits {
			return o, core.Errorf(core.CodeInvalid, "limit must be a whole number from 1 to %d, not %q", maxSearchHits, l)
		}
		o.Limit = n
	}
	return o, nil
}

// handleSearch handles GET /search?q=&order=&cursor=: the search page. A
// query that cannot run is shown in the page, with the reason, as a 400.
func (s *Server) handleSearch(c echo.Context) error {
	src, err := s.searcher()
	if err != nil {
		return err
	}
	raw := c.QueryParam("q")
	q := strings.TrimSpace(raw)
	v := &views.SearchPageView{Meta: s.meta("search"), Query: q, Order: c.QueryParam(views.ParamOrder)}
	if q != "" {
		v.Meta = s.meta(firstRunes(q, 60) + " · search")
	}
	if q == "" {
		return s.render(c, http.StatusOK, views.SearchPage(v))
	}
	o, err := searchOptions(c, searchPageHits)
	if err == nil {
		var parsed *search.Query
		if parsed, err = search.Parse(q, time.Now()); err == nil {
			var res SearchResults
			if res, err = src.Search(c.Request().Context(), parsed, o); err == nil {
				page := views.NewSearchPage(v.Meta, q, o.Order, res.Hits)
				s.nameParents(c.Request().Context(), page)
				page.RankedAmong = res.RankedAmong
				if res.NextCursor != "" {
					page.MoreURL = views.SearchURL(q, o.Order, res.NextCursor)
				}
				return s.render(c, http.StatusOK, views.SearchPage(page))
			}
		}
	}
	status := statusOf(err)
	if status >= 500 {
		return err
	}
	v.Error = messageOf(err, status)
	return s.render(c, status, views.SearchPage(v))
}

// searchHitJSON is one hit of GET /api/search.
type searchHitJSON struct {
	SessionID    string   `json:"sessionId"`
	SessionTitle string   `json:"sessionTitle"`
	CallID       string   `json:"callId,omitempty"`
	Seq          *int64   `json:"seq,omitempty"` // absent for a session's own document
	Kind         string   `json:"kind"`
	Tool         string   `json:"tool,omitempty"`
	Error        *string  `json:"error,omitempty"` // a failure's code ("" when it has none)
	Time         int64    `json:"time"`
	Field        string   `json:"field"`
	Snippet      string   `json:"snippet"`
	Highlights   [][2]int `json:"highlights"`
	URL          string   `json:"url"`
}

// handleAPISearch handles GET /api/search?q=&limit=&cursor=&order=rank|time:
// {"hits": […], "nextCursor"}; a query that cannot run is a 400 {error, code}.
func (s *Server) handleAPISearch(c echo.Context) error {
	src, err := s.searcher()
	if err != nil {
		return err
	}
	q := strings.TrimSpace(c.QueryParam("q"))
	if q == "" {
		return core.Errorf(core.CodeInvalid, "q is required: the words and filters to search for (e.g. q=tool:grep config)")
	}
	o, err := searchOptions(c, apiSearchHits)
	if err != nil {
		return err
	}
	parsed, err := search.Parse(q, time.Now())
	if err != nil {
		return err
	}
	res, err := src.Search(c.Request().Context(), parsed, o)
	if err != nil {
		return err
	}
	out := struct {
		Hits       []searchHitJSON `json:"hits"`
		NextCursor string          `json:"nextCursor,omitempty"`
		// RankedAmong: the hits rank among the most recent this many
		// matches (more matched).
		RankedAmong int `json:"rankedAmong,omitempty"`
	}{Hits: make([]searchHitJSON, 0, len(res.Hits)), NextCursor: res.NextCursor, RankedAmong: res.RankedAmong}
	for i := range res.Hits {
		h := &res.Hits[i]
		j := searchHitJSON{SessionID: h.SessionID, SessionTitle: h.SessionTitle, Kind: h.Kind, Tool: h.Tool, Time: h.Time,
			Field: h.Snippet.Label, Snippet: h.Snippet.Text, Highlights: h.Snippet.Highlights, URL: views.HitURL(h)}
		if h.Kind == search.KindCall {
			j.CallID = h.CallID
		}
		if h.Seq >= 0 {
			seq := h.Seq
			j.Seq = &seq
		}
		if h.Failed {
			code := h.ErrorCode
			j.Error = &code
		}
		if j.Highlights == nil {
			j.Highlights = [][2]int{}
		}
		out.Hits = append(out.Hits, j)
	}
	return c.JSON(http.StatusOK, out)
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// nameParents has each group of hits inside a subagent name the session it
// is a child of (a summary read per group; one that fails names none).
func (s *Server) nameParents(ctx context.Context, page *views.SearchPageView) {
	for _, g := range page.Groups {
		if sum, err := s.deps.Sessions.Summary(ctx, g.SessionID); err == nil && sum.ParentID != "" {
			g.Parent, g.ParentURL = sum.ParentID, views.SessionURL(sum.ParentID)
		}
	}
}
