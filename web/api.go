package web

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/core/sessionlog"
	"prism/views"
)

// maxImportBytes bounds one import request.
const maxImportBytes = 512 << 20

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
	req := StartRequest{Prompt: strings.TrimSpace(c.FormValue("prompt")), Model: c.FormValue("model"), Workspace: c.FormValue("workspace")}
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
	text := strings.TrimSpace(c.FormValue("text"))
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
	if err := r.Cancel(c.Request().Context(), id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
}

// handleAPIList handles GET /api/sessions?q=&limit=.
func (s *Server) handleAPIList(c echo.Context) error {
	q := ListQuery{Query: c.QueryParam("q")}
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
	dec := json.NewDecoder(io.LimitReader(c.Request().Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return core.Errorf(core.CodeInvalid, "body must be {prompt, model?, workspace?}: %v", err)
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
// format import reads, written by sessionlog.WriteJSONL (the bytes of
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
	if err := sessionlog.WriteJSONL(w, h, events); err != nil {
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
	// Sessions say, per session of the file(s), what the import did.
	Sessions []ImportedSession `json:"sessions"`
	// IDs are the same sessions' ids, in order.
	IDs []string `json:"ids"`
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
// transaction) or a raw body (?name= or Content-Disposition names it). It
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
	req.Body = http.MaxBytesReader(c.Response(), req.Body, maxImportBytes)
	var got []ImportedSession
	ct, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if ct == "multipart/form-data" {
		if o.As != "" {
			return core.Errorf(core.CodeInvalid, "as= imports one session: send the file as the raw request body, not a multipart form")
		}
		mr, err := req.MultipartReader()
		if err != nil {
			return core.Errorf(core.CodeInvalid, "multipart: %v", err)
		}
		files := 0
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return core.Errorf(core.CodeInvalid, "multipart: %v", err)
			}
			if part.FileName() == "" {
				continue
			}
			files++
			res, err := s.deps.Importer.Import(ctx, part.FileName(), part, o)
			if err != nil {
				return err
			}
			got = append(got, res...)
		}
		if files == 0 {
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
		if got, err = s.deps.Importer.Import(ctx, name, req.Body, o); err != nil {
			return err
		}
	}
	a := importAnswer{Sessions: got, IDs: []string{}}
	if a.Sessions == nil {
		a.Sessions = []ImportedSession{}
	}
	status := http.StatusOK
	for _, r := range got {
		a.IDs = append(a.IDs, r.ID)
		if r.Status != ImportUnchanged {
			status = http.StatusCreated
		}
	}
	return c.JSON(status, a)
}
