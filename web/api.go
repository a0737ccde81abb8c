package web

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
	"prism/views"
)

func (s *Server) runner() (Runner, error) {
	if s.deps.Runner == nil {
		return nil, core.Errorf(core.CodeUnavailable, "no agent runner is configured on this server: sessions can be imported and watched, not started")
	}
	return s.deps.Runner, nil
}

// handleStart handles POST /sessions (a form with prompt, model?,
// workspace?): it starts a session and redirects to it.
func (s *Server) handleStart(c echo.Context) error {
	r, err := s.runner()
	if err != nil {
		return err
	}
	form, err := formValues(c, false)
	if err != nil {
		return err
	}
	req := StartRequest{Prompt: strings.TrimSpace(form.Get("prompt")), Model: form.Get("model"), Workspace: form.Get("workspace")}
	if req.Prompt == "" {
		return core.Errorf(core.CodeInvalid, "prompt is required")
	}
	id, err := r.StartSession(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
}

// handleMessage handles POST /sessions/:id/messages (form field text).
func (s *Server) handleMessage(c echo.Context) error {
	r, err := s.runner()
	if err != nil {
		return err
	}
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	form, err := formValues(c, false)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(form.Get("text"))
	if text == "" {
		return core.Errorf(core.CodeInvalid, "text is required")
	}
	if err := r.SendMessage(c.Request().Context(), id, text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
}

// handleCancel handles POST /sessions/:id/cancel.
func (s *Server) handleCancel(c echo.Context) error {
	r, err := s.runner()
	if err != nil {
		return err
	}
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	if _, err := formValues(c, true); err != nil { // no field; a body must still be a form
		return err
	}
	if err := r.Cancel(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
}

// handleAPIList handles GET /api/sessions?q=&status=&errors=&sort=&limit=.
func (s *Server) handleAPIList(c echo.Context) error {
	q, err := listQuery(c)
	if err != nil {
		return err
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return core.Errorf(core.CodeInvalid, "limit must be a non-negative integer")
		}
		q.Limit = n
	}
	sums, err := s.deps.Sessions.ListSessions(c.Request().Context(), q)
	if err != nil {
		return err
	}
	if sums == nil {
		sums = []SessionSummary{}
	}
	return c.JSON(http.StatusOK, sums)
}

// handleAPIStart handles POST /api/sessions {prompt, model?, workspace?} → {id}.
func (s *Server) handleAPIStart(c echo.Context) error {
	r, err := s.runner()
	if err != nil {
		return err
	}
	var req StartRequest
	if err := decodeJSON(c, &req, "{prompt, model?, workspace?}", false); err != nil {
		return err
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return core.Errorf(core.CodeInvalid, "prompt is required")
	}
	id, err := r.StartSession(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]string{"id": id})
}

// handleAPIEvents handles GET /api/sessions/:id/events: the session as
// JSONL, a header line {"type":"session",…} then one event per line — the
// format import reads, written by dsh.WriteJSONL (the bytes of
// prism export).
func (s *Server) handleAPIEvents(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	h, events, err := s.deps.Sessions.LoadSession(ctx, id)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.Header().Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": "prism-session-" + id + ".jsonl"}))
	if err := dsh.WriteJSONL(w, h, events); err != nil {
		if !w.Committed {
			return err
		}
		// The response started; a truncated file is the signal.
		s.log.ErrorContext(ctx, "export: write failed", logkey.SessionID, id, logkey.Err, err)
	}
	return nil
}

// importAnswer is what POST /api/sessions/import answers.
type importAnswer struct {
	// Sessions say, per session of the file(s), what the import did:
	// created, extended (the stored log was a prefix of the file's),
	// unchanged (it was already imported; nothing was written) or replaced
	// (?replace=1).
	Sessions []ImportedSession `json:"sessions"`
	// IDs are the same sessions' ids, in the file's order (a dsh export's
	// root first, then its subagents).
	IDs []string `json:"ids"`
	// Message sums it up for people.
	Message string `json:"message"`
}

// importOptions reads ?as= and ?replace= of an import request.
func importOptions(c echo.Context) (ImportOptions, error) {
	o := ImportOptions{As: c.QueryParam("as")}
	switch v := c.QueryParam("replace"); v {
	case "", "0", "false":
	case "1", "true":
		o.Replace = true
	default:
		return o, core.Errorf(core.CodeInvalid, "replace must be 1 or 0, got %q", v)
	}
	if _, ok := c.QueryParams()["as"]; ok && o.As == "" {
		return o, core.Errorf(core.CodeInvalid, "as must name the new session id")
	}
	return o, nil
}

// handleAPIImport handles POST /api/sessions/import[?as=ID][&replace=1]: a
// multipart form (every file part is imported, each in its own
// transaction) or a raw body (?name= or Content-Disposition names it). The
// whole body is spooled to temporary files first (see uploads.go), so the
// store's import slots are taken only by uploads that have arrived. It
// answers per session what happened — 201 when anything was stored, 200
// when every session was already there unchanged. ?as= takes a raw body
// holding one session (a multipart form is refused before anything is
// read); a file that fails changes nothing.
func (s *Server) handleAPIImport(c echo.Context) error {
	if s.deps.Importer == nil {
		return core.Errorf(core.CodeUnavailable, "import is not configured on this server")
	}
	ctx := c.Request().Context()
	req := c.Request()
	o, err := importOptions(c)
	if err != nil {
		return err
	}
	// Every file is spooled before the first is imported: a slow upload
	// holds a temporary file, never one of the store's import slots.
	type upload struct {
		name string
		f    *os.File
	}
	var uploads []upload
	defer func() {
		for _, u := range uploads {
			u.f.Close()
			os.Remove(u.f.Name())
		}
	}()
	spool := func(name string, body io.Reader) error {
		f, err := spoolUpload(body, func() error { return bodyFailure(c) })
		if core.ErrorCode(err) == core.CodeTimeout {
			s.log.WarnContext(ctx, "import upload cut", logkey.File, name, logkey.Err, err)
		}
		if err != nil {
			return err
		}
		uploads = append(uploads, upload{name, f})
		return nil
	}
	if mediaType(c) == echo.MIMEMultipartForm {
		if o.As != "" {
			return core.Errorf(core.CodeInvalid, "as= imports one session: send the file as the raw request body, not a multipart form")
		}
		mr, err := req.MultipartReader()
		if err != nil {
			return core.Errorf(core.CodeInvalid, "multipart: %v", err)
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				if f := bodyFailure(c); f != nil {
					return f
				}
				return core.Errorf(core.CodeInvalid, "multipart: %v", err)
			}
			if part.FileName() == "" {
				continue
			}
			if err := spool(part.FileName(), part); err != nil {
				return err
			}
		}
		if len(uploads) == 0 {
			return core.Errorf(core.CodeInvalid, "no file part in the form")
		}
	} else {
		name := c.QueryParam("name")
		if name == "" {
			if _, p, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentDisposition)); err == nil {
				name = p["filename"]
			}
		}
		if name == "" {
			name = "session.jsonl"
		}
		if err := spool(name, req.Body); err != nil {
			return err
		}
	}
	bodyReceived(c)
	var got []ImportedSession
	for _, u := range uploads {
		res, err := s.deps.Importer.Import(ctx, u.name, u.f, o)
		if err != nil {
			return err
		}
		got = append(got, res...)
	}
	a := importAnswer{IDs: []string{}, Sessions: got}
	if a.Sessions == nil {
		a.Sessions = []ImportedSession{}
	}
	changed := 0
	for _, r := range got {
		a.IDs = append(a.IDs, r.ID)
		if r.Status != ImportUnchanged {
			changed++
		}
	}
	status := http.StatusCreated
	switch {
	case len(got) == 0:
		a.Message = "the file holds no session"
	case changed == 0:
		status = http.StatusOK
		a.Message = fmt.Sprintf("nothing changed: %s already imported, with the same log", plural(len(got), "session was", "sessions were"))
	default:
		a.Message = fmt.Sprintf("%s imported, extended or replaced", plural(changed, "session", "sessions"))
		if n := len(got) - changed; n > 0 {
			a.Message += fmt.Sprintf("; %s already there unchanged", plural(n, "session was", "sessions were"))
		}
	}
	return c.JSON(status, a)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
