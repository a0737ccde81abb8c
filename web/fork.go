package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
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
	// Title is the fork's title ("" = its prompt's first line, or "fork
	// of <the source's title> at turn N").
	Title string `json:"title,omitempty"`
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
		System: form.Get("system"), Tools: form.Get("tools"), Title: strings.TrimSpace(form.Get("title"))}
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

// Bounds of the fork tree page.
const (
	maxForkDepth = 8
	maxForkNodes = 500
)

// forks returns the forks of session id that still exist, oldest first:
// its fork notes (notes.KindFork, which agent.Runner.Fork writes on the
// source), each with the fork's list row. None without a note store; an
// error when the notes cannot be read.
func (s *Server) forks(ctx context.Context, id string) ([]views.ForkLink, error) {
	if s.deps.Notes == nil {
		return nil, nil
	}
	ns, err := s.deps.Notes.Notes(ctx, id, notes.Query{Kind: notes.KindFork})
	if err != nil {
		return nil, err
	}
	var out []views.ForkLink
	seen := map[string]bool{}
	for _, n := range ns {
		f, err := notes.ParseFork(n.Data)
		if err != nil || seen[f.Session] {
			continue
		}
		seen[f.Session] = true
		sum, err := s.deps.Sessions.Summary(ctx, f.Session)
		if core.ErrorCode(err) == core.CodeNotFound {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		out = append(out, views.NewForkLink(sum.ID, sum.Title, sum.Status, sum.Calls, f.SeedLength, sum.CreatedAt))
	}
	return out, nil
}

// forkLinks returns the forks of session id as its header links them
// (nil when they cannot be read: logged).
func (s *Server) forkLinks(ctx context.Context, id string) []views.ForkLink {
	fs, err := s.forks(ctx, id)
	if err != nil {
		if core.ErrorCode(err) != core.CodeNotFound {
			s.log.Warn("forks not read", logkey.SessionID, id, logkey.Err, err)
		}
		return nil
	}
	return fs
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
	nodes := 0
	seen := map[string]bool{id: true}
	var walk func(id string, depth int) ([]views.ForkLink, error)
	walk = func(id string, depth int) ([]views.ForkLink, error) {
		fs, err := s.forks(ctx, id)
		if err != nil {
			return nil, err
		}
		var out []views.ForkLink
		for _, f := range fs {
			if seen[f.ID] {
				continue
			}
			if nodes >= maxForkNodes {
				v.Cut = true
				break
			}
			seen[f.ID] = true
			nodes++
			if depth+1 < maxForkDepth {
				if f.Forks, err = walk(f.ID, depth+1); err != nil {
					return nil, err
				}
			} else if more, err := s.forks(ctx, f.ID); err == nil && len(more) > 0 {
				v.Cut = true
			}
			out = append(out, f)
		}
		return out, nil
	}
	if v.Forks, err = walk(id, 0); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.ForksPage(v))
}

// forkCount returns how many forks session id has (0 when they cannot
// be read).
func (s *Server) forkCount(ctx context.Context, id string) int {
	fs, err := s.forks(ctx, id)
	if err != nil {
		return 0
	}
	return len(fs)
}

// OpenNoter is an optional interface of a NoteStore: the notes of one
// kind not removed, across sessions (db.Store and pgstore.Store).
type OpenNoter interface {
	OpenNotes(ctx context.Context, kind string) ([]notes.Note, error)
}

// forkCounts counts the forks of every session that has any, for the
// list's rows, from one read of the fork notes across sessions (a fork
// deleted since is not counted). Nil when the store cannot list them:
// the rows then show no count.
func (s *Server) forkCounts(ctx context.Context) map[string]int {
	o, ok := s.deps.Notes.(OpenNoter)
	if !ok {
		return nil
	}
	ns, err := o.OpenNotes(ctx, notes.KindFork)
	if err != nil {
		s.log.Warn("fork counts not read", logkey.Err, err)
		return nil
	}
	out := map[string]int{}
	seen := map[[2]string]bool{}
	for _, n := range ns {
		f, err := notes.ParseFork(n.Data)
		if err != nil || seen[[2]string{n.Session, f.Session}] {
			continue
		}
		seen[[2]string{n.Session, f.Session}] = true
		if _, err := s.deps.Sessions.Summary(ctx, f.Session); err == nil {
			out[n.Session]++
		}
	}
	return out
}
