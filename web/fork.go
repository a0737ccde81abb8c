package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/views"
)

// Forker is an optional interface of a Runner: it forks a stored session
// at a completed turn into a new session it runs (backend.AgentRunner,
// through agent.Runner.Fork). Without it the fork routes answer 503.
type Forker interface {
	// ForkSession forks req.Source and returns the fork's id. Errors carry
	// dsh's fork codes (core.CodeOpenTurn, core.CodeSessionNotFound,
	// core.CodeSessionAlreadyExists, core.CodeInvalidBoundary).
	ForkSession(ctx context.Context, req ForkRequest) (string, error)
}

// ForkRequest is the body of POST /api/sessions/{id}/forks (the source is
// the path's id): the fork's id (none: generated), its boundary (atTurn,
// or atSeq naming a turn/end), a prompt to run at once, a model, its own
// system prompt, and tools "replay" (default) or "live".
type ForkRequest struct {
	Source string `json:"-"`
	ID     string `json:"id,omitempty"`
	AtTurn *int   `json:"atTurn,omitempty"`
	AtSeq  *int64 `json:"atSeq,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	Model  string `json:"model,omitempty"`
	System string `json:"system,omitempty"`
	Tools  string `json:"tools,omitempty"`
}

// ForkedSession is the answer of the fork API: the new session.
type ForkedSession struct {
	ID            string `json:"id"`
	ParentSession string `json:"parentSession"`
	URL           string `json:"url"`
}

func (s *Server) forker() (Forker, error) {
	r, err := s.runner()
	if err != nil {
		return nil, err
	}
	f, ok := r.(Forker)
	if !ok {
		return nil, core.Errorf(core.CodeUnavailable, "this server's runner cannot fork sessions")
	}
	return f, nil
}

// handleAPIFork handles POST /api/sessions/:id/forks {id?, atTurn | atSeq,
// prompt?, model?, system?, tools?} → 201 {id, parentSession, url}.
func (s *Server) handleAPIFork(c echo.Context) error {
	f, err := s.forker()
	if err != nil {
		return err
	}
	src, err := param(c, "id")
	if err != nil {
		return err
	}
	var req ForkRequest
	if err := decodeJSON(c, &req, "{id?, atTurn, prompt?, model?, system?, tools?}", false); err != nil {
		return err
	}
	req.Source = src
	id, err := f.ForkSession(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, ForkedSession{ID: id, ParentSession: src, URL: views.SessionURL(id)})
}

// handleForkForm handles POST /sessions/:id/forks, the page's "fork here"
// form (atTurn or atSeq, prompt, model, system, tools): it forks the
// session and redirects to the fork.
func (s *Server) handleForkForm(c echo.Context) error {
	f, err := s.forker()
	if err != nil {
		return err
	}
	src, err := param(c, "id")
	if err != nil {
		return err
	}
	form, err := formValues(c, false)
	if err != nil {
		return err
	}
	req := ForkRequest{Source: src, Prompt: strings.TrimSpace(form.Get("prompt")), Model: form.Get("model"),
		System: form.Get("system"), Tools: form.Get("tools")}
	if v := strings.TrimSpace(form.Get("atTurn")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return core.ForkError(core.CodeInvalidBoundary, "atTurn must be a turn number, not %q", v)
		}
		req.AtTurn = &n
	}
	if v := strings.TrimSpace(form.Get("atSeq")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return core.ForkError(core.CodeInvalidBoundary, "atSeq must be an event's seq, not %q", v)
		}
		req.AtSeq = &n
	}
	id, err := f.ForkSession(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.SessionURL(id))
}

// canFork reports whether the owner's pages offer "fork here": the
// server's runner forks.
func (s *Server) canFork() bool {
	_, ok := s.deps.Runner.(Forker)
	return ok
}
