package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/approval"
	"prism/core/logkey"
	"prism/views"
)

// maxNoteBytes bounds a decision's note (it reaches the model and the log).
const maxNoteBytes = 4000

// The approval routes' own body caps, under Tuning.MaxBodyBytes: a decision
// is a word and a note, a policy a word.
const (
	maxDecisionBody = 64 << 10
	maxPolicyBody   = 4 << 10
)

// apiApproval is one waiting approval as GET /api/approvals lists it.
type apiApproval struct {
	approval.Pending
	// SessionURL is the waiting card on its session page; DecideURL is
	// where a JSON decision is posted.
	SessionURL string `json:"sessionUrl"`
	DecideURL  string `json:"decideUrl"`
}

// decisionRequest is the body of POST /api/sessions/:id/approvals/:approvalId.
type decisionRequest struct {
	Decision string `json:"decision"`
	Note     string `json:"note,omitempty"`
}

// handleAPIApprovals handles GET /api/approvals: the approvals waiting for a
// person across the sessions this server runs, oldest first.
func (s *Server) handleAPIApprovals(c echo.Context) error {
	out := []apiApproval{}
	if s.deps.Approvals != nil {
		for _, p := range s.deps.Approvals.Pending() {
			u := views.SessionURL(p.SessionID)
			if p.CallID != "" {
				u = views.CardURL(p.SessionID, views.CallElemID(p.CallID))
			}
			out = append(out, apiApproval{Pending: p, SessionURL: u, DecideURL: views.APIApprovalURL(p.SessionID, p.ID)})
		}
	}
	return c.JSON(http.StatusOK, out)
}

// handleAPIDecide handles POST /api/sessions/:id/approvals/:approvalId
// {decision: "approve"|"reject", note?} → 200 with the decision once it is
// committed to the log; 409 when it was decided already (naming by whom),
// 404 for an approval the session never asked, 503 (with Retry-After)
// when the session store cannot be reached: the decision was not taken
// and the call still waits (decide).
func (s *Server) handleAPIDecide(c echo.Context) error {
	id, approvalID, err := approvalParams(c)
	if err != nil {
		return err
	}
	var req decisionRequest
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxDecisionBody)
	if err := decodeJSON(c, &req, `{"decision": "approve"|"reject", "note"?: string}`, false); err != nil {
		return err
	}
	d, err := s.decide(c, id, approvalID, req.Decision, req.Note, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// handleDecide handles POST /sessions/:id/approvals/:approvalId, a card's
// form (decision, note). A Datastar request is answered with the page's
// notice saying what happened (a refusal included, with status 200 so the
// client applies it); a plain form post is redirected to the session page,
// or shown the error page.
func (s *Server) handleDecide(c echo.Context) error {
	id, approvalID, err := approvalParams(c)
	if err != nil {
		return err
	}
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxDecisionBody)
	var d approval.Decided
	form, err := formValues(c, false)
	if err == nil {
		d, err = s.decide(c, id, approvalID, form.Get("decision"), form.Get("note"), false)
	}
	if r.Header.Get("Datastar-Request") != "true" {
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
	}
	msg, kind := decidedNotice(d), ""
	var already *approval.AlreadyDecidedError
	switch {
	case errors.As(err, &already):
		msg, kind = "Already decided: "+already.Decided.Describe()+".", "warn"
	case err != nil:
		status := statusOf(err)
		if status >= 500 {
			s.log.ErrorContext(r.Context(), "approval decision failed", logkey.SessionID, id, logkey.Approval, approvalID, logkey.Err, err)
		}
		msg, kind = messageOf(err, status), "warn"
	}
	html, rerr := views.Render(r.Context(), views.Notice(msg, kind))
	if rerr != nil {
		return rerr
	}
	startSSE(c)
	if _, err := c.Response().Write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, "")); err != nil {
		s.log.DebugContext(r.Context(), "decision notice not sent", logkey.Err, err)
	}
	return nil
}

// handleAPIPolicy handles POST /api/sessions/:id/approval-policy
// {policy: "ask"|"never"}: the policy of a session this server runs, from
// its next ask on.
func (s *Server) handleAPIPolicy(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	if s.deps.Approvals == nil {
		return core.Errorf(core.CodeUnavailable, "approvals are not decided on this server: no agent runs here")
	}
	var req struct {
		Policy string `json:"policy"`
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxPolicyBody)
	if err := decodeJSON(c, &req, `{"policy": "ask"|"never"}`, false); err != nil {
		return err
	}
	if err := s.deps.Approvals.SetPolicy(c.Request().Context(), id, req.Policy); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"sessionId": id, "policy": req.Policy})
}

func decidedNotice(d approval.Decided) string {
	if d.Outcome == core.ApprovalAllowedOnce {
		return "Approved: the call runs."
	}
	if d.Note != "" {
		return "Rejected: the agent reads your note."
	}
	return "Rejected."
}

func approvalParams(c echo.Context) (id, approvalID string, err error) {
	if id, err = param(c, "id"); err != nil {
		return "", "", err
	}
	approvalID, err = param(c, "approvalId")
	return id, approvalID, err
}

// notDecidedError is a decision refused because the session store cannot
// be reached: the approval still waits. It keeps the store error's code,
// Retry-After and public message (which never names the database's
// address).
type notDecidedError struct {
	approval string
	err      error
}

func (e *notDecidedError) Error() string {
	return "approval " + e.approval + " was not decided: " + e.err.Error()
}

func (e *notDecidedError) Unwrap() error { return e.err }

// PublicMessage says what was not done and why, without the driver's
// cause.
func (e *notDecidedError) PublicMessage() string {
	msg := "the session store is unreachable"
	var public interface{ PublicMessage() string }
	if errors.As(e.err, &public) {
		msg = public.PublicMessage()
	}
	return "approval " + e.approval + " was not decided (it still waits): " + msg
}

// decide takes one decision on approvalID of session id: the first wins.
// An approval the service does not know is looked up in the log, so that a
// late decision still learns who decided (or that the session runs
// elsewhere).
func (s *Server) decide(c echo.Context, id, approvalID, decision, note string, api bool) (approval.Decided, error) {
	if s.deps.Approvals == nil {
		return approval.Decided{}, core.Errorf(core.CodeUnavailable, "approvals are not decided on this server: no agent runs here")
	}
	var d approval.Decision
	switch decision {
	case "approve":
		d.Approve = true
	case "reject":
	default:
		return approval.Decided{}, core.Errorf(core.CodeInvalid, `decision must be "approve" or "reject", got %q`, decision)
	}
	d.Note = strings.TrimSpace(note)
	switch {
	case len(d.Note) > maxNoteBytes:
		return approval.Decided{}, core.Errorf(core.CodeInvalid, "the note is %d bytes; at most %d are taken", len(d.Note), maxNoteBytes)
	case !utf8.ValidString(d.Note):
		return approval.Decided{}, core.Errorf(core.CodeInvalid, "the note is not valid UTF-8")
	}
	d.By = s.decider(c.Request(), api)
	ctx := c.Request().Context()
	// A decision is answered only once it is durable (Service.Decide waits
	// for its commit), and a failed commit ends the session: the call
	// could never be decided again. So a store that cannot be reached now
	// refuses the decision before it is taken — 503 naming the store, the
	// call still waiting, decidable once the store is back. (Should the
	// store fail between this read and the commit, Decide's error is the
	// answer: never a 200 for a decision that is not in the log.)
	if _, err := s.deps.Sessions.Summary(ctx, id); core.ErrorCode(err) == core.CodeUnavailable {
		return approval.Decided{}, &notDecidedError{approval: approvalID, err: err}
	}
	got, err := s.deps.Approvals.Decide(ctx, id, approvalID, d)
	if core.ErrorCode(err) == core.CodeNotFound {
		return approval.Decided{}, s.decidedInLog(ctx, id, approvalID)
	}
	return got, err
}

// decidedInLog explains why the service has no pending approvalID of
// session id, from the session's log.
func (s *Server) decidedInLog(ctx context.Context, id, approvalID string) error {
	_, events, err := s.deps.Sessions.LoadSession(ctx, id)
	if err != nil {
		return err
	}
	asked := false
	for i := range events {
		e := &events[i]
		switch e.Type {
		case core.EventApprovalAsked:
			var a core.ApprovalAsked
			asked = asked || e.DecodeData(&a) == nil && a.ID == approvalID
		case core.EventApprovalDecided:
			var d core.ApprovalDecided
			if e.DecodeData(&d) == nil && d.ID == approvalID {
				return &approval.AlreadyDecidedError{Decided: approval.Decided{ApprovalDecided: d, SessionID: id, At: e.Time}}
			}
		}
	}
	if asked {
		return core.Errorf(core.CodeConflict, "approval %s of session %s is not waiting on this server: the session runs elsewhere, so it is decided there", approvalID, id)
	}
	return core.Errorf(core.CodeNotFound, "session %s has no approval %s", id, approvalID)
}

// tabID is what a page sends as its Prism-Tab header: a short random id
// the tab keeps in sessionStorage.
var tabID = regexp.MustCompile(`^[a-z0-9]{8}$`)

// decider names who decides, as honestly as the request allows: the owner
// when the request carries the owner's token or login (Deps.Owner), the
// browser tab (its
// Prism-Tab id, kept per tab) or API client, and the client's software and
// address as the connection shows them — nothing a client could not claim
// otherwise, so it is a description, not a proof.
func (s *Server) decider(r *http.Request, api bool) string {
	where := clientName(r.UserAgent())
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		where += " at " + host
	}
	var who string
	switch tab := r.Header.Get("Prism-Tab"); {
	case api:
		who = "an API client (" + where + ")"
	case tabID.MatchString(tab):
		who = "tab " + tab + " (" + where + ")"
	default:
		who = "a browser (" + where + ")"
	}
	if s.deps.Owner != nil && s.deps.Owner.Check(r) {
		return "the owner, " + who
	}
	return who
}

// clientName names a user agent: the browser family, else the first
// product token ("curl/8.5.0").
func clientName(ua string) string {
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"HeadlessChrome/", "Headless Chrome"},
		{"Chrome/", "Chrome"}, {"Safari/", "Safari"},
	} {
		if strings.Contains(ua, b.token) {
			return b.name
		}
	}
	tok, _, _ := strings.Cut(strings.TrimSpace(ua), " ")
	if tok == "" {
		return "an unnamed client"
	}
	if len(tok) > 40 {
		tok = tok[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, tok)
}

// canDecide reports whether pages of session id may offer decisions: the
// server decides approvals and runs the session.
func (s *Server) canDecide(id string) bool {
	return s.deps.Approvals != nil && s.owns(id)
}
