package web

// Notes beside a session's log: the JSON API (the notes routes and the
// annotations shorthand for labels). Open pages get every note write
// through the commit feed (NoteFeed), whichever node or tab made it.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/views"
)

// NoteStore keeps the notes beside each session's log (db.Store and
// pgstore.Store implement it). Unknown sessions, calls and notes are
// core.CodeNotFound; a kind or data the kind refuses core.CodeInvalid;
// data past notes.MaxData core.CodeTooLarge.
type NoteStore interface {
	// Notes returns a session's notes that q selects, oldest first.
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	// PutNote writes a new note (in.ID "") or replaces one's data.
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
	// RemoveNote removes a note (it still shows before its RemovedAtSeq).
	RemoveNote(ctx context.Context, session, id string) (notes.Note, error)
}

// NoteFeed is an optional interface of a CommitFeed: OnNotes registers fn
// for commits that wrote one of a session's notes (any node's). Without
// it, pages see notes when they load, not live.
type NoteFeed interface {
	OnNotes(fn func(sessionID string)) (remove func())
}

// maxNoteBody bounds a note request's body: the largest data a note may
// hold and its envelope. A body past it is 413 before it is read; data
// past notes.MaxData inside it is 413 from the store.
const maxNoteBody = notes.MaxData + 16<<10

func (s *Server) noteStore() (NoteStore, error) {
	if s.deps.Notes == nil {
		return nil, core.Errorf(core.CodeUnavailable, "notes are not configured on this server")
	}
	return s.deps.Notes, nil
}

// clientKind checks that clients may write kind: an unknown kind is
// core.CodeInvalid, the server's own kinds core.CodeForbidden.
func clientKind(kind string) error {
	k, ok := notes.KindOf(kind)
	switch {
	case kind == "":
		return core.Errorf(core.CodeInvalid, "a note needs a kind (clients may write %q)", notes.KindLabel)
	case !ok:
		return core.Errorf(core.CodeInvalid, "unknown note kind %q", kind)
	case !k.Client:
		return core.Errorf(core.CodeForbidden, "%s notes are the server's own: clients may write only %q notes", kind, notes.KindLabel)
	}
	return nil
}

// noteRequest is the body of POST /api/sessions/{id}/notes and of PUT
// /api/sessions/{id}/notes/{noteId} (there callId is not taken).
type noteRequest struct {
	Kind   string          `json:"kind"`
	CallID string          `json:"callId"`
	Data   json.RawMessage `json:"data"`
}

// annotationRequest is the body of POST /api/sessions/{id}/annotations
// and of PUT …/annotations/{noteId} (there callId is not taken).
type annotationRequest struct {
	CallID string       `json:"callId"`
	Label  string       `json:"label"`
	Score  *json.Number `json:"score"`
	Note   string       `json:"note"`
}

// labelData is the label note's data of an annotation request.
func (r annotationRequest) labelData() (json.RawMessage, error) {
	b, err := json.Marshal(notes.LabelData{Label: strings.TrimSpace(r.Label), Score: r.Score, Note: r.Note})
	if err != nil {
		return nil, core.Errorf(core.CodeInvalid, "the label's score must be a number: %v", err)
	}
	return b, nil
}

// handleAPINotes handles GET /api/sessions/:id/notes (?kind=).
func (s *Server) handleAPINotes(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	st, err := s.noteStore()
	if err != nil {
		return err
	}
	kind := c.QueryParam("kind")
	if _, ok := notes.KindOf(kind); kind != "" && !ok {
		return core.Errorf(core.CodeInvalid, "unknown note kind %q", kind)
	}
	list, err := st.Notes(c.Request().Context(), id, notes.Query{Kind: kind})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]any{"notes": list})
}

// handleAPINoteCreate handles POST /api/sessions/:id/notes.
func (s *Server) handleAPINoteCreate(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	var req noteRequest
	if err := s.decodeNote(c, &req, "{kind, callId?, data}"); err != nil {
		return err
	}
	n, err := s.putNote(c, notes.Input{Session: id, Kind: req.Kind, CallID: req.CallID, Data: req.Data})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, n)
}

// handleAPINotePut handles PUT /api/sessions/:id/notes/:noteId: the
// note's data replaced (the last write wins).
func (s *Server) handleAPINotePut(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	noteID, err := param(c, "noteId")
	if err != nil {
		return err
	}
	var req noteRequest
	if err := s.decodeNote(c, &req, "{kind, data}"); err != nil {
		return err
	}
	if req.CallID != "" {
		return core.Errorf(core.CodeInvalid, "a note's call cannot change (remove it and make another)")
	}
	n, err := s.putNote(c, notes.Input{ID: noteID, Session: id, Kind: req.Kind, Data: req.Data})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, n)
}

// handleAPINoteDelete handles DELETE /api/sessions/:id/notes/:noteId.
func (s *Server) handleAPINoteDelete(c echo.Context) error {
	if err := s.removeNote(c, c.QueryParam("kind")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// handleAPIAnnotationCreate handles POST /api/sessions/:id/annotations:
// a label, answered {id}.
func (s *Server) handleAPIAnnotationCreate(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	var req annotationRequest
	if err := s.decodeNote(c, &req, "{callId?, label, score?, note?}"); err != nil {
		return err
	}
	data, err := req.labelData()
	if err != nil {
		return err
	}
	n, err := s.putNote(c, notes.Input{Session: id, Kind: notes.KindLabel, CallID: req.CallID, Data: data})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]string{"id": n.ID})
}

// handleAPIAnnotationPut handles PUT /api/sessions/:id/annotations/:noteId:
// the whole label replaced.
func (s *Server) handleAPIAnnotationPut(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	noteID, err := param(c, "noteId")
	if err != nil {
		return err
	}
	var req annotationRequest
	if err := s.decodeNote(c, &req, "{label, score?, note?}"); err != nil {
		return err
	}
	if req.CallID != "" {
		return core.Errorf(core.CodeInvalid, "a label's call cannot change (remove it and make another)")
	}
	data, err := req.labelData()
	if err != nil {
		return err
	}
	n, err := s.putNote(c, notes.Input{ID: noteID, Session: id, Kind: notes.KindLabel, Data: data})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"id": n.ID})
}

// handleAPIAnnotationDelete handles DELETE
// /api/sessions/:id/annotations/:noteId.
func (s *Server) handleAPIAnnotationDelete(c echo.Context) error {
	if err := s.removeNote(c, notes.KindLabel); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) decodeNote(c echo.Context, v any, shape string) error {
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxNoteBody)
	return decodeJSON(c, v, shape, false)
}

// putNote writes a client's note: a kind clients may write, its author
// the request's (as approvals name who decided).
func (s *Server) putNote(c echo.Context, in notes.Input) (notes.Note, error) {
	st, err := s.noteStore()
	if err != nil {
		return notes.Note{}, err
	}
	if err := clientKind(in.Kind); err != nil {
		return notes.Note{}, err
	}
	in.Author = s.decider(c.Request(), strings.HasPrefix(c.Path(), "/api/"))
	n, err := st.PutNote(c.Request().Context(), in)
	if err != nil {
		return notes.Note{}, err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	s.log.InfoContext(c.Request().Context(), "note written", logkey.SessionID, in.Session, logkey.NoteID, n.ID, logkey.NoteKind, n.Kind)
	return n, nil
}

// removeNote removes the note the path names; kind, when set, is the kind
// it must have. The server's own kinds are core.CodeForbidden.
func (s *Server) removeNote(c echo.Context, kind string) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	noteID, err := param(c, "noteId")
	if err != nil {
		return err
	}
	st, err := s.noteStore()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	found, err := st.Notes(ctx, id, notes.Query{ID: noteID})
	if err != nil {
		return err
	}
	if len(found) == 0 || (kind != "" && found[0].Kind != kind) {
		return notes.NotFound(id, noteID)
	}
	if err := clientKind(found[0].Kind); err != nil {
		return err
	}
	_, err = st.RemoveNote(ctx, id, noteID)
	return err
}

// handleLabelForm handles POST /sessions/:id/labels (a card's new label)
// and POST /sessions/:id/labels/:noteId (an edit; with ?remove=1 the
// label's removal). The card itself changes through the page's stream,
// in every tab; the form's answer is a notice when something was wrong.
func (s *Server) handleLabelForm(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	noteID := ""
	if c.Param("noteId") != "" {
		if noteID, err = param(c, "noteId"); err != nil {
			return err
		}
	}
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxNoteBody)
	form, err := formValues(c, true)
	switch {
	case err != nil:
	case noteID != "" && c.QueryParam("remove") == "1":
		err = s.removeNote(c, notes.KindLabel)
	default:
		req := annotationRequest{Label: form.Get("label"), Note: form.Get("note")}
		if sc := strings.TrimSpace(form.Get("score")); sc != "" {
			n := json.Number(sc)
			req.Score = &n
		}
		var data json.RawMessage
		if data, err = req.labelData(); err == nil {
			_, err = s.putNote(c, notes.Input{ID: noteID, Session: id, Kind: notes.KindLabel, CallID: form.Get("callId"), Data: data})
		}
	}
	if r.Header.Get("Datastar-Request") != "true" {
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
	}
	if err == nil {
		c.Response().WriteHeader(http.StatusNoContent)
		return nil
	}
	status := statusOf(err)
	if status >= 500 {
		s.log.ErrorContext(r.Context(), "label not written", logkey.SessionID, id, logkey.Err, err)
	}
	html, rerr := views.Render(r.Context(), views.Notice(messageOf(err, status), "warn"))
	if rerr != nil {
		return rerr
	}
	startSSE(c)
	if _, err := c.Response().Write(formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, "")); err != nil {
		s.log.DebugContext(r.Context(), "label notice not sent", logkey.Err, err)
	}
	return nil
}

// AnnotatedCounter is an optional interface of a NoteStore: how many
// sessions have a label (the session list's "annotated" filter shows it).
type AnnotatedCounter interface {
	AnnotatedCount(ctx context.Context) (int, error)
}

// annotatedCount is the "annotated" filter's count (nil: the server keeps
// no notes, or cannot count them now).
func (s *Server) annotatedCount(ctx context.Context) *int {
	c, ok := s.deps.Notes.(AnnotatedCounter)
	if !ok {
		return nil
	}
	n, err := c.AnnotatedCount(ctx)
	if err != nil {
		s.log.Warn("annotated sessions not counted", logkey.Err, err)
		return nil
	}
	return &n
}
