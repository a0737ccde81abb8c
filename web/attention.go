package web

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/views"
)

// Attention is the attention rules' service (backend/attend.Service):
// the open firings across sessions, a person's acknowledgement, and the
// /rules page's model. Without it /rules says there are no rules and the
// list shows no attention marks.
type Attention interface {
	// Open returns the open firings (notes of kind attention), oldest
	// first.
	Open(ctx context.Context) ([]notes.Note, error)
	// Ack clears one by a person (by), recording who and when;
	// core.CodeNotFound when it is not open.
	Ack(ctx context.Context, id, by string) (notes.Note, error)
	// Page is the /rules page (never the webhook's secret).
	Page() views.RulesPage
}

// apiAttention is one open firing in GET /api/attention.
type apiAttention struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	CallID  string `json:"callId,omitempty"`
	AtSeq   int64  `json:"atSeq"`
	Time    int64  `json:"time"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
	URL     string `json:"url"`
}

// openAttention returns the open firings by session (nil without rules).
func (s *Server) openAttention(ctx context.Context) map[string][]notes.Note {
	if s.deps.Attention == nil {
		return nil
	}
	ns, err := s.deps.Attention.Open(ctx)
	if err != nil {
		s.log.Warn("open attention not read", logkey.Err, err)
		return nil
	}
	out := map[string][]notes.Note{}
	for _, n := range ns {
		out[n.Session] = append(out[n.Session], n)
	}
	return out
}

// sessionAttention returns session id's open attention firings — one
// session's notes, for the list row a commit re-renders (openAttention
// reads every session's).
func (s *Server) sessionAttention(ctx context.Context, id string) []notes.Note {
	if s.deps.Attention == nil || s.deps.Notes == nil {
		return nil
	}
	ns, err := s.deps.Notes.Notes(ctx, id, notes.Query{Kind: notes.KindAttention})
	if err != nil {
		s.log.Warn("open attention not read", logkey.SessionID, id, logkey.Err, err)
		return nil
	}
	return ns
}

// handleAPIAttention handles GET /api/attention: the open firings across
// sessions, oldest first.
func (s *Server) handleAPIAttention(c echo.Context) error {
	out := []apiAttention{}
	if s.deps.Attention != nil {
		ns, err := s.deps.Attention.Open(c.Request().Context())
		if err != nil {
			return err
		}
		for _, n := range ns {
			var d notes.AttentionData
			_ = json.Unmarshal(n.Data, &d)
			u := views.SessionURL(n.Session)
			if n.CallID != "" {
				u = views.CardURL(n.Session, views.CallElemID(n.CallID))
			}
			out = append(out, apiAttention{ID: n.ID, Session: n.Session, CallID: n.CallID, AtSeq: n.AtSeq, Time: n.Time, Rule: d.Rule, Reason: d.Reason, URL: u})
		}
	}
	return c.JSON(http.StatusOK, out)
}

// handleAttentionAck handles POST /api/attention/:id/ack: a person clears
// a firing (who and when are recorded). A form post (the card's and the
// board's button) is redirected to the session's page; an API call gets
// the cleared note.
func (s *Server) handleAttentionAck(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	if s.deps.Attention == nil {
		return core.Errorf(core.CodeNotFound, "attention %s not found: no rules run on this server", id)
	}
	r := c.Request()
	form := strings.HasPrefix(r.Header.Get(echo.HeaderContentType), echo.MIMEApplicationForm)
	n, err := s.deps.Attention.Ack(r.Context(), id, s.decider(r, !form))
	if err != nil {
		return err
	}
	if form {
		return c.Redirect(http.StatusSeeOther, views.SessionURL(n.Session))
	}
	return c.JSON(http.StatusOK, n)
}

// handleRules handles GET /rules: the rules in force, read-only.
func (s *Server) handleRules(c echo.Context) error {
	var p views.RulesPage
	if s.deps.Attention != nil {
		p = s.deps.Attention.Page()
	}
	return s.render(c, http.StatusOK, views.RulesPageView(s.meta("rules"), p))
}

// boardLimit bounds the running sessions the board shows.
const boardLimit = 500

// boardView builds the board: running sessions, those that wait for a
// person (an approval, an attention) first, then the most recently
// updated.
func (s *Server) boardView(ctx context.Context, inFlight inFlightFunc) (*views.BoardView, error) {
	sums, err := s.deps.Sessions.ListSessions(ctx, ListQuery{Status: core.StatusRunning, Limit: boardLimit})
	if err != nil {
		return nil, err
	}
	attn := s.openAttention(ctx)
	var pending []approvalOf
	if s.deps.Approvals != nil {
		for _, p := range s.deps.Approvals.Pending() {
			pending = append(pending, approvalOf{session: p.SessionID, row: views.BoardApproval{Tool: p.ToolName, Reason: p.Reason, DecideURL: views.ApprovalURL(p.SessionID, p.ID)}})
		}
	}
	now := time.Now()
	v := &views.BoardView{Meta: s.meta("board"), Priced: s.deps.Prices != nil}
	calls := inFlight(ctx, sums)
	for i := range sums {
		m := &sums[i]
		b := views.NewBoardRow(m.ID, &m.Summary, s.deps.Prices)
		b.Attention = views.AttentionOf(attn[m.ID])
		for _, p := range pending {
			if p.session == m.ID {
				b.Approvals = append(b.Approvals, p.row)
			}
		}
		if c := calls[i]; c.ok {
			b.Call, b.Age = c.call, views.Ago(now.Sub(time.UnixMilli(c.at)))
		}
		v.Rows = append(v.Rows, b)
	}
	slices.SortStableFunc(v.Rows, func(a, b *views.BoardRow) int {
		switch {
		case a.NeedsPerson() == b.NeedsPerson():
			return 0
		case a.NeedsPerson():
			return -1
		}
		return 1
	})
	if err := s.broker.board.cells.fill(ctx, v.Rows); err != nil {
		return nil, err
	}
	if s.deps.Commits != nil {
		v.StreamURL = views.BoardStreamURL()
	}
	return v, nil
}

type approvalOf struct {
	session string
	row     views.BoardApproval
}

// inFlightTail is how many of a session's last events the board reads to
// find its call in flight.
const inFlightTail = 64

// inFlightPeek is how many of a session's last events the board reads
// first when it knows nothing of its tail: enough when they hold as many
// calls waiting as its summary counts (the latest call in flight is
// nearly always among a log's last events); else it reads inFlightTail.
const inFlightPeek = 16

// callInFlight finds the running sessions' calls in flight for one page
// (GET /board): with a commit feed, from what the last paints read
// (boardTails: only the tails that moved since are read, in one query);
// without one (nothing would tell of a replaced log), every tail is read
// in one query (callsInFlight). The board's stream keeps its tails in
// memory instead (boardHub).
//
// Call it before the page lists its sessions: it takes the generation of
// what is known then (boardTails.begin), so a log replaced after the
// listing is not kept under the old log's summary.
func (s *Server) callInFlight() inFlightFunc {
	if s.deps.Commits != nil {
		known := s.broker.board.known
		gen := known.begin()
		return func(ctx context.Context, sums []SessionSummary) []inFlightCall {
			return known.inFlight(ctx, s.deps.Sessions, sums, gen)
		}
	}
	return func(ctx context.Context, sums []SessionSummary) []inFlightCall {
		return callsInFlight(ctx, s.deps.Sessions, sums, map[string]*callTail{})
	}
}

// handleBoard handles GET /board.
func (s *Server) handleBoard(c echo.Context) error {
	v, err := s.boardView(c.Request().Context(), s.callInFlight())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.BoardPage(v))
}

// boardFrame renders the board's rows as one SSE frame (the board hub's
// render).
func (s *Server) boardFrame(ctx context.Context, inFlight inFlightFunc) ([]byte, error) {
	v, err := s.boardView(ctx, inFlight)
	if err != nil {
		return nil, err
	}
	html, err := views.Render(ctx, views.BoardRows(v))
	if err != nil {
		return nil, err
	}
	return formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""), nil
}

// boardRefresh is how often the board renders again without a change
// (the ages of calls in flight move).
const boardRefresh = 5 * time.Second

// handleBoardStream handles GET /board/stream: the board's rows, rendered
// once per change for every viewer by the board hub (and every
// boardRefresh), each stream writing the latest render it has not sent.
func (s *Server) handleBoardStream(c echo.Context) error {
	ctx := c.Request().Context()
	release, err := s.takeStreamSlot(c)
	if err != nil {
		return err
	}
	defer release()
	board := s.broker.board
	sub := board.subscribe() // before the headers: a change after them is sent
	defer board.unsubscribe(sub)
	startSSE(c)
	w := s.newStreamConn(c)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.broker.list.done:
			w.fail(stoppedMessage)
			return nil
		case <-sub.kick:
		}
		frame, version, err := board.current()
		if version == sub.seen {
			continue
		}
		sub.seen = version
		if err != nil {
			if ctx.Err() == nil {
				w.fail("board unavailable: " + messageOf(err, statusOf(err)))
			}
			return nil
		}
		if !w.write(frame) {
			return nil
		}
	}
}
