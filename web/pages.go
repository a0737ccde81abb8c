package web

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/notes"
	"prism/core/price"
	"prism/views"
)

// param returns a path parameter, unescaped. Echo matches on the raw path
// (and leaves escapes in params) only when the request has one, e.g. for an
// escaped "/"; otherwise params are already decoded.
func param(c echo.Context, name string) (string, error) {
	if c.Request().URL.RawPath == "" {
		return c.Param(name), nil
	}
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return "", core.Errorf(core.CodeInvalid, "bad %s in path", name)
	}
	return v, nil
}

// listLimit bounds the session list page.
const listLimit = 200

// listStatuses and listSorts are the values the list's filters take.
var (
	listStatuses = []string{core.StatusRunning, core.StatusIdle, core.StatusEnded, core.StatusInterrupted}
	listSorts    = []string{"updated", "created", "calls", "errors"}
)

// listQuery reads the session list's filters (q, status, errors, sort).
func listQuery(c echo.Context) (ListQuery, error) {
	q := ListQuery{Query: strings.TrimSpace(c.QueryParam(views.ParamQuery)), Status: c.QueryParam(views.ParamStatus), Sort: c.QueryParam(views.ParamSort)}
	if q.Status != "" && !slices.Contains(listStatuses, q.Status) {
		return q, core.Errorf(core.CodeInvalid, "status must be one of %s, not %q", strings.Join(listStatuses, ", "), q.Status)
	}
	if q.Sort == "updated" {
		q.Sort = ""
	}
	if q.Sort != "" && !slices.Contains(listSorts, q.Sort) {
		return q, core.Errorf(core.CodeInvalid, "sort must be one of %s, not %q", strings.Join(listSorts, ", "), q.Sort)
	}
	switch e := c.QueryParam(views.ParamHasErrors); e {
	case "", "0":
	case "1", "on", "true":
		q.HasErrors = true
	default:
		return q, core.Errorf(core.CodeInvalid, "errors must be 1 (only sessions with errors) or absent, not %q", e)
	}
	switch a := c.QueryParam(views.ParamAttention); a {
	case "", "0":
	case "1", "on", "true":
		q.Attention = true
	default:
		return q, core.Errorf(core.CodeInvalid, "attention must be 1 (only sessions needing attention) or absent, not %q", a)
	}
	switch a := c.QueryParam(views.ParamAnnotated); a {
	case "", "0":
	case "1", "on", "true":
		q.Annotated = true
	default:
		return q, core.Errorf(core.CodeInvalid, "annotated must be 1 (only sessions with a label) or absent, not %q", a)
	}
	return q, nil
}

func (q ListQuery) filter() views.ListFilter {
	return views.ListFilter{Query: q.Query, Status: q.Status, HasErrors: q.HasErrors, Annotated: q.Annotated, Sort: q.Sort, Attention: q.Attention}
}

// handleHome handles GET /?q=&status=&errors=&sort=: the session list.
func (s *Server) handleHome(c echo.Context) error {
	ctx := c.Request().Context()
	lq, err := listQuery(c)
	if err != nil {
		return err
	}
	lq.Limit = listLimit
	attn := s.openAttention(ctx)
	sums, err := s.listSessions(ctx, lq, attn)
	if err != nil {
		return err
	}
	v := &views.SessionListView{Meta: s.meta("sessions"), Query: lq.Query, Filter: lq.filter(), CanRun: s.deps.Runner != nil, CanSearch: s.deps.Search != nil, Priced: s.deps.Prices != nil,
		Watchable: s.deps.Watchable, AttentionCount: len(attn)}
	if s.deps.Runner != nil && slices.ContainsFunc(sums, func(m SessionSummary) bool { return m.Status == core.StatusRunning }) {
		v.BoardURL = views.BoardURL()
	}
	forks := s.forkCounts(ctx)
	for i := range sums {
		v.Rows = append(v.Rows, rowViewWith(&sums[i], s.deps.Prices, attn))
		v.Rows[len(v.Rows)-1].Forks = forks[sums[i].ID]
		if sums[i].ID == s.deps.DemoID {
			r := v.Rows[len(v.Rows)-1]
			v.Demo = &views.Link{Label: r.Title, URL: r.URL}
		}
	}
	if s.deps.Commits != nil {
		v.StreamURL = views.ListFilterStreamURL(lq.filter())
	}
	v.Annotated = s.annotatedCount(ctx)
	return s.render(c, http.StatusOK, views.SessionListPage(v))
}

// listSessions lists the sessions lq selects; with lq.Attention, those
// with an open attention firing (attn), most recently updated first.
func (s *Server) listSessions(ctx context.Context, lq ListQuery, attn map[string][]notes.Note) ([]SessionSummary, error) {
	if !lq.Attention {
		return s.deps.Sessions.ListSessions(ctx, lq)
	}
	var out []SessionSummary
	for id := range attn {
		m, err := s.deps.Sessions.Summary(ctx, id)
		if err != nil {
			continue // deleted meanwhile
		}
		if matches(lq, &m) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b SessionSummary) int { return cmp.Compare(b.UpdatedAt, a.UpdatedAt) })
	return out, nil
}

// rowViewWith is rowView with the session's open attention firings.
func rowViewWith(m *SessionSummary, p price.Table, attn map[string][]notes.Note) *views.SessionRowView {
	r := rowView(m, p)
	r.Attention = views.AttentionOf(attn[m.ID])
	return r
}

// rowView is a session's list row, priced by p (nil: no cost column).
func rowView(m *SessionSummary, p price.Table) *views.SessionRowView {
	return views.NewSessionRow(m.ID, m.ParentID, m.CreatedAt, m.UpdatedAt, m.Summary, p)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// owns reports whether the runner takes follow-ups for, and cancels turns
// of, session id (SessionOwner).
func (s *Server) owns(id string) bool {
	if s.deps.Runner == nil {
		return false
	}
	if o, ok := s.deps.Runner.(SessionOwner); ok {
		return o.Owns(id)
	}
	return true
}

// writeEarlier answers a Datastar request for earlier segments with the
// one patch that fills their placeholder.
func (s *Server) writeEarlier(c echo.Context, e *views.EarlierView) error {
	return s.patchOne(c, views.Earlier(e))
}

// handleCall handles GET /sessions/:id/calls/:callId: every projection of
// one call. With several cards for the call id, ?card=ELEMENT-ID picks one.
func (s *Server) handleCall(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	callID, err := param(c, "callId")
	if err != nil {
		return err
	}
	// The call id as the log spells it; else what a hand-written URL may
	// mean by it (views.CallRefs: a card's element id, "call-" and the id).
	var t *views.Timeline
	var cards []*views.Card
	for _, ref := range views.CallRefs(callID) {
		if t, err = s.callFold(ctx, id, ref, s.broker.fold); err != nil {
			return err
		}
		if cards = t.CardsByCallID(ref); len(cards) > 0 {
			callID = ref
			break
		}
	}
	if len(cards) == 0 {
		return core.Errorf(core.CodeNotFound, "session %q has no call %q", id, callID)
	}
	card := cards[0]
	if want := c.QueryParam("card"); want != "" {
		for _, k := range cards {
			if k.ID == want {
				card = k
			}
		}
	}
	return s.render(c, http.StatusOK, views.CallPage(views.NewCallPage(s.meta("call "+short(callID)), t, card)))
}
