package web

// Share links: the owner's side — the JSON API, the session page's share
// form and list, and the owner's own exports (whose renderers share links
// reuse).

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/starfederation/datastar-go/datastar"

	"prism/core"
	"prism/core/logkey"
	"prism/core/redact"
	"prism/core/share"
	"prism/views"
)

// maxShareBody bounds a share request's body.
const maxShareBody = 64 << 10

func (s *Server) shares() (ShareStore, error) {
	if s.deps.Shares == nil {
		return nil, core.Errorf(core.CodeUnavailable, "share links are not configured on this server")
	}
	return s.deps.Shares, nil
}

// shareRequest is the body of POST /api/sessions/{id}/shares; {} is the
// whole session, live, no expiry, redacted.
type shareRequest struct {
	Label     string `json:"label"`
	ExpiresAt int64  `json:"expiresAt"`
	UpToSeq   *int64 `json:"upToSeq"`
	Redact    *bool  `json:"redact"`
	// Labels shows the session's labels on the link (off by default).
	Labels bool `json:"labels"`
	// Children nests the session's subagents on the link (off by default).
	Children bool `json:"children"`
}

// shareCreated is the answer to a created link: its URL is shown once.
type shareCreated struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	Label     string `json:"label"`
	CreatedAt int64  `json:"createdAt"`
	ExpiresAt int64  `json:"expiresAt,omitempty"`
	UpToSeq   *int64 `json:"upToSeq"`
	Redact    bool   `json:"redact"`
	Labels    bool   `json:"labels"`
	Children  bool   `json:"children"`
}

// decodeShareJSON reads a share request's JSON body (decodeJSON, with
// the share routes' smaller cap; an empty body is {}).
func decodeShareJSON(c echo.Context, v any, shape string) error {
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxShareBody)
	return decodeJSON(c, v, shape, true)
}

// shareURL is a link's absolute URL: --public-url, else the request's
// scheme and host.
func (s *Server) shareURL(c echo.Context, token string) string {
	base := strings.TrimRight(s.deps.PublicURL, "/")
	if base == "" {
		host := c.Request().Host
		if s.deps.SharePort != 0 {
			name, _, err := net.SplitHostPort(host)
			if err != nil {
				name = strings.Trim(host, "[]")
			}
			host = net.JoinHostPort(name, strconv.Itoa(s.deps.SharePort))
		}
		base = c.Scheme() + "://" + host
	}
	return base + views.ShareURL(token)
}

// createShare makes a link to session id (which must exist).
func (s *Server) createShare(c echo.Context, spec share.Spec) (share.Share, string, error) {
	st, err := s.shares()
	if err != nil {
		return share.Share{}, "", err
	}
	sh, tok, err := st.CreateShare(c.Request().Context(), spec)
	if err != nil {
		return sh, "", err
	}
	s.log.InfoContext(c.Request().Context(), "share link created", logkey.SessionID, spec.SessionID, logkey.ShareID, sh.ID)
	return sh, s.shareURL(c, tok), nil
}

// handleAPIShareCreate handles POST /api/sessions/:id/shares.
func (s *Server) handleAPIShareCreate(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	var req shareRequest
	if err := decodeShareJSON(c, &req, "{label?, expiresAt?, upToSeq?, redact?, labels?, children?}"); err != nil {
		return err
	}
	spec := share.Spec{SessionID: id, Label: req.Label, ExpiresAt: req.ExpiresAt, UpToSeq: req.UpToSeq, Redact: req.Redact == nil || *req.Redact,
		Labels: req.Labels, Children: req.Children}
	sh, u, err := s.createShare(c, spec)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, shareCreated{ID: sh.ID, URL: u, Label: sh.Label, CreatedAt: sh.CreatedAt,
		ExpiresAt: sh.ExpiresAt, UpToSeq: sh.UpToSeq, Redact: sh.Redact, Labels: sh.Labels, Children: sh.Children})
}

// handleAPIShareList handles GET /api/sessions/:id/shares: the session's
// links, never their tokens.
func (s *Server) handleAPIShareList(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	st, err := s.shares()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.deps.Sessions.Summary(ctx, id); err != nil {
		return err
	}
	list, err := st.Shares(ctx, id)
	if err != nil {
		return err
	}
	if list == nil {
		list = []share.Share{}
	}
	return c.JSON(http.StatusOK, map[string]any{"shares": list})
}

// handleAPIShareRevoke handles DELETE /api/shares/:shareId.
func (s *Server) handleAPIShareRevoke(c echo.Context) error {
	id, err := param(c, "shareId")
	if err != nil {
		return err
	}
	if _, err := s.revokeShare(c, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// revokeShare revokes a link and ends its open streams on this server at
// once (others notice within Tuning.ShareCheck).
func (s *Server) revokeShare(c echo.Context, id string) (share.Share, error) {
	st, err := s.shares()
	if err != nil {
		return share.Share{}, err
	}
	sh, err := st.RevokeShare(c.Request().Context(), id)
	if err != nil {
		return sh, err
	}
	s.shareStreams.end(id)
	s.broker.endLink(id)
	s.log.InfoContext(c.Request().Context(), "share link revoked", logkey.SessionID, sh.SessionID, logkey.ShareID, id)
	return sh, nil
}

// preview runs the redaction pass over what a link scoped at upTo would
// show and reports what it hides.
func (s *Server) preview(c echo.Context, id string, upTo *int64) (redact.Report, error) {
	if _, err := s.shares(); err != nil {
		return redact.Report{}, err
	}
	ctx := c.Request().Context()
	var h core.SessionHeader
	var events []core.Event
	var err error
	if upTo != nil {
		if *upTo < 0 {
			return redact.Report{}, core.Errorf(core.CodeInvalid, "upToSeq must be 0 or more")
		}
		h, events, err = s.deps.Sessions.EventsUpTo(ctx, id, *upTo)
	} else {
		h, events, err = s.deps.Sessions.LoadSession(ctx, id)
	}
	if err != nil {
		return redact.Report{}, err
	}
	_, _, rep := s.deps.Redactor.Session(h, events)
	if rep.Kinds == nil {
		rep.Kinds = []redact.KindReport{}
	}
	return rep, nil
}

// handleAPISharePreview handles POST /api/sessions/:id/shares/preview
// {upToSeq?}: what redaction would hide, before a link is made.
func (s *Server) handleAPISharePreview(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	var req struct {
		UpToSeq *int64 `json:"upToSeq"`
	}
	if err := decodeShareJSON(c, &req, "{upToSeq?}"); err != nil {
		return err
	}
	rep, err := s.preview(c, id, req.UpToSeq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}

// previewSignals are the share form's signals.
type previewSignals struct {
	Scope  string `json:"shareScope"`
	Seq    int64  `json:"shareSeq"`
	Redact bool   `json:"shareRedact"`
}

// handleSharePreview handles GET /sessions/:id/shares/preview: the share
// form's preview, a Datastar patch of #share-preview.
func (s *Server) handleSharePreview(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	sig := previewSignals{Scope: "live", Redact: true}
	if err := datastar.ReadSignals(c.Request(), &sig); err != nil {
		return core.Errorf(core.CodeInvalid, "preview: %v", err)
	}
	var upTo *int64
	if sig.Scope == "upto" {
		upTo = &sig.Seq
	}
	rep, err := s.preview(c, id, upTo)
	if err != nil {
		return err
	}
	html, err := views.Render(c.Request().Context(), views.SharePreview(views.NewSharePreview(rep, upTo, sig.Redact)))
	if err != nil {
		return err
	}
	startSSE(c)
	_, _ = c.Response().Write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""))
	return nil
}

// sharePanel builds the owner's share panel of a session page.
func (s *Server) sharePanel(c echo.Context, id string, lastSeq int64) (*views.SharePanelView, error) {
	if s.deps.Shares == nil {
		return nil, nil
	}
	list, err := s.deps.Shares.Shares(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	p := &views.SharePanelView{SessionID: id, CreateURL: views.ShareCreateURL(id), PreviewURL: views.SharePreviewURL(id), LastSeq: max(lastSeq, 0)}
	now := s.now()
	for _, sh := range list {
		p.Links = append(p.Links, views.NewShareRow(sh, now))
	}
	return p, nil
}

// formSpec reads the share form.
func (s *Server) formSpec(c echo.Context, id string) (share.Spec, error) {
	form, err := formValues(c, false)
	if err != nil {
		return share.Spec{}, err
	}
	spec := share.Spec{SessionID: id, Label: form.Get("label"), Redact: form.Get("redact") != ""}
	spec.Labels, spec.Children = form.Get("labels") != "", form.Get("children") != ""
	now := s.now()
	switch v := form.Get("expires"); v {
	case "":
	case "1h":
		spec.ExpiresAt = now.Add(time.Hour).UnixMilli()
	case "1d":
		spec.ExpiresAt = now.Add(24 * time.Hour).UnixMilli()
	case "7d":
		spec.ExpiresAt = now.Add(7 * 24 * time.Hour).UnixMilli()
	case "date":
		d, err := time.Parse("2006-01-02", form.Get("expiresOn"))
		if err != nil {
			return spec, core.Errorf(core.CodeInvalid, "expiry date must be a date (YYYY-MM-DD), got %q", form.Get("expiresOn"))
		}
		spec.ExpiresAt = d.Add(24 * time.Hour).UnixMilli() // the end of that day, UTC
	default:
		return spec, core.Errorf(core.CodeInvalid, "expiry must be never, 1h, 1d, 7d or a date, got %q", v)
	}
	switch form.Get("scope") {
	case "", "live":
	case "upto":
		n, err := strconv.ParseInt(strings.TrimSpace(form.Get("upToSeq")), 10, 64)
		if err != nil {
			return spec, core.Errorf(core.CodeInvalid, "the last event shown must be a number, got %q", form.Get("upToSeq"))
		}
		spec.UpToSeq = &n
	default:
		return spec, core.Errorf(core.CodeInvalid, "scope must be live or upto")
	}
	return spec, nil
}

// handleShareForm handles POST /sessions/:id/shares: the session page's
// share form. A created link redirects (303) to the session page, which
// shows its URL once (views.SessionSharedURL: a reload neither posts again
// nor shows it twice); the form's error is answered with the page itself.
func (s *Server) handleShareForm(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	if _, err := s.shares(); err != nil {
		return err
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxShareBody)
	status := http.StatusOK
	var msg string
	spec, err := s.formSpec(c, id)
	if err == nil {
		var sh share.Share
		var u string
		sh, u, err = s.createShare(c, spec)
		if err == nil {
			row := views.NewShareRow(sh, s.now())
			row.URL = u
			return c.Redirect(http.StatusSeeOther, views.SessionSharedURL(id, s.created.put(id, row, s.now())))
		}
	}
	if err != nil {
		// What the form said is answered in the panel; a refused body
		// (413, 408, 415), a missing session or a failure is an error.
		switch core.ErrorCode(err) {
		case core.CodeNotFound, core.CodeTooLarge, core.CodeTimeout, core.CodeUnsupportedMediaType:
			return err
		}
		if statusOf(err) >= 500 {
			return err
		}
		msg, status = messageOf(err, statusOf(err)), statusOf(err)
	}
	v, err := s.sessionPage(c, id, views.LivePlace())
	if err != nil {
		return err
	}
	if v.Share != nil {
		v.Share.Error = msg
		if rep, err := s.preview(c, id, nil); err == nil { // the panel opens with its preview
			v.Share.Preview = views.NewSharePreview(rep, nil, true)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return s.render(c, status, views.SessionPage(v))
}

// handleShareRevokeForm handles POST /shares/:shareId/revoke, the revoke
// button of the session page's link list.
func (s *Server) handleShareRevokeForm(c echo.Context) error {
	id, err := param(c, "shareId")
	if err != nil {
		return err
	}
	sh, err := s.revokeShare(c, id)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.SessionURL(sh.SessionID)+"#share-panel")
}

// handleExportHTML handles GET /sessions/:id/export.html: the whole session
// as one self-contained HTML file.
func (s *Server) handleExportHTML(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	h, events, err := s.deps.Sessions.LoadSession(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.writeExport(c, s.ownerFold(h, events), ExportNote(s.now(), nil, false))
}

// handleCallFile handles GET /sessions/:id/calls/:callId/{content.txt,
// arguments.txt, meta.json}: one call's full parts (?card= picks one of
// several cards of a reused call id); see writeCallFile.
func (s *Server) handleCallFile(file string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := param(c, "id")
		if err != nil {
			return err
		}
		callID, err := param(c, "callId")
		if err != nil {
			return err
		}
		t, err := s.callFold(c.Request().Context(), id, callID, s.ownerFold)
		if err != nil {
			return err
		}
		card, err := shareCard(c, t, callID)
		if err != nil {
			return core.Errorf(core.CodeNotFound, "session %q has no call %q", id, callID)
		}
		return writeCallFile(c, file, callID, card)
	}
}

// callFold folds one call's cards with fold: the call's own events with
// their context (SessionSource.CallEvents), without reading the rest of
// the log. A card whose call was never logged (crash repair's "not
// started") takes its tool and arguments from the turn's assistant
// request, which that selection does not hold: then the whole log is read
// and folded.
func (s *Server) callFold(ctx context.Context, id, callID string, fold func(core.SessionHeader, []core.Event) *views.Timeline) (*views.Timeline, error) {
	h, events, err := s.deps.Sessions.CallEvents(ctx, id, callID)
	if err != nil {
		return nil, err
	}
	t := fold(h, events)
	for _, k := range t.CardsByCallID(callID) {
		if !k.HasCall {
			h, events, err := s.deps.Sessions.LoadSession(ctx, id)
			if err != nil {
				return nil, err
			}
			return fold(h, events), nil
		}
	}
	return t, nil
}
