package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
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

// Lineage is an optional interface of a SessionSource: the forks of a
// session (sessions whose parent it is that are not subagents). With it
// the session header names the forks and /sessions/{id}/forks shows their
// tree; backend.Source implements it.
type Lineage interface {
	Forks(ctx context.Context, id string) ([]ForkSummary, error)
}

// ForkSummary is one fork: its list row and how many events it inherited.
type ForkSummary struct {
	SessionSummary
	SeedLength int64
}

// Bounds of the fork tree page.
const (
	maxForkDepth = 8
	maxForkNodes = 500
)

// forkLinks returns the forks of session id as its header links them
// (nil without a Lineage, or when they cannot be read: logged).
func (s *Server) forkLinks(ctx context.Context, id string) []views.ForkLink {
	l, ok := s.deps.Sessions.(Lineage)
	if !ok {
		return nil
	}
	fs, err := l.Forks(ctx, id)
	if err != nil {
		s.log.Warn("forks not read", logkey.SessionID, id, logkey.Err, err)
		return nil
	}
	out := make([]views.ForkLink, len(fs))
	for i, f := range fs {
		out[i] = views.NewForkLink(f.ID, f.Title, f.Status, f.Calls, f.SeedLength, f.CreatedAt)
	}
	return out
}

// handleForksPage handles GET /sessions/:id/forks: the tree of the
// session's forks, their forks below them (at most maxForkDepth levels
// and maxForkNodes forks).
func (s *Server) handleForksPage(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sum, err := s.deps.Sessions.Summary(ctx, id)
	if err != nil {
		return err
	}
	v := &views.ForksPageView{ID: id, URL: views.SessionURL(id), Title: views.DisplayTitle(sum.Title, id)}
	v.Meta = s.meta("Forks of " + v.Title)
	if l, ok := s.deps.Sessions.(Lineage); ok {
		nodes := 0
		var walk func(id string, depth int) ([]views.ForkLink, error)
		walk = func(id string, depth int) ([]views.ForkLink, error) {
			fs, err := l.Forks(ctx, id)
			if err != nil {
				return nil, err
			}
			var out []views.ForkLink
			for _, f := range fs {
				if nodes >= maxForkNodes {
					v.Cut = true
					break
				}
				nodes++
				link := views.NewForkLink(f.ID, f.Title, f.Status, f.Calls, f.SeedLength, f.CreatedAt)
				if depth+1 < maxForkDepth {
					if link.Forks, err = walk(f.ID, depth+1); err != nil {
						return nil, err
					}
				} else if more, err := l.Forks(ctx, f.ID); err == nil && len(more) > 0 {
					v.Cut = true
				}
				out = append(out, link)
			}
			return out, nil
		}
		if v.Forks, err = walk(id, 0); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, views.ForksPage(v))
}

// forkCount returns how many forks session id has (0 without a Lineage or
// when they cannot be read).
func forkCount(ctx context.Context, src SessionSource, id string) int {
	l, ok := src.(Lineage)
	if !ok {
		return 0
	}
	fs, err := l.Forks(ctx, id)
	if err != nil {
		return 0
	}
	return len(fs)
}
