package web

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/views"
	"prism/web/ownerauth"
)

// requireOwner refuses every request that is not the owner's (bearer token
// or login cookie) on every path the route table does not make public
// (share links, static files, the login page and the liveness probe), when
// an owner token is set: a browser asking for a page gets the login page
// (status 401), everything else a 401 error.
func (s *Server) requireOwner(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		g := s.deps.Owner
		r := c.Request()
		if g == nil || s.classes.public(r.URL.Path) {
			return next(c)
		}
		err := g.Authenticate(r)
		var many *ownerauth.ErrTooMany
		switch {
		case err == nil:
			return next(c)
		case errors.As(err, &many):
			return tooManyTokens(many)
		case !errors.Is(err, ownerauth.ErrNotOwner) && !errors.Is(err, ownerauth.ErrWrongToken):
			return err // the login's look-up failed: the store's error
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="prism"`)
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsHTML(r) && !strings.HasPrefix(r.URL.Path, "/api/") {
			return s.render(c, http.StatusUnauthorized, views.LoginPage(s.loginView(r.URL.RequestURI(), "")))
		}
		return core.Errorf(core.CodeUnauthorized, "owner authentication required: send Authorization: Bearer with the owner token (PRISM_OWNER_TOKEN), or sign in at /login")
	}
}

func wantsHTML(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), "text/html") }

func (s *Server) loginView(next, msg string) *views.LoginView {
	return &views.LoginView{Meta: s.shareMeta("sign in"), Next: ownerauth.SafeNext(next), Error: msg}
}

// handleLoginPage handles GET /login.
func (s *Server) handleLoginPage(c echo.Context) error {
	if s.deps.Owner == nil {
		return c.Redirect(http.StatusSeeOther, views.HomeURL(""))
	}
	return s.render(c, http.StatusOK, views.LoginPage(s.loginView(c.QueryParam("next"), "")))
}

// handleLogin handles POST /login: the owner token for a session cookie.
func (s *Server) handleLogin(c echo.Context) error {
	g := s.deps.Owner
	if g == nil {
		return c.Redirect(http.StatusSeeOther, views.HomeURL(""))
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, 64<<10)
	form, err := formValues(c, false)
	if err != nil {
		return err
	}
	next := ownerauth.SafeNext(form.Get("next"))
	err = g.Login(c.Response(), c.Request(), form.Get("token"))
	var many *ownerauth.ErrTooMany
	switch {
	case err == nil:
		return c.Redirect(http.StatusSeeOther, next)
	case errors.As(err, &many):
		c.Response().Header().Set("Retry-After", retryAfter(many.RetryAfter))
		return s.render(c, http.StatusTooManyRequests, views.LoginPage(s.loginView(next, err.Error())))
	case errors.Is(err, ownerauth.ErrWrongToken):
		return s.render(c, http.StatusUnauthorized, views.LoginPage(s.loginView(next, err.Error())))
	default:
		return err // the login could not be stored
	}
}

// handleLogout handles POST /logout: the login cookie is revoked in the
// store (refused from now on, on every node) and cleared.
func (s *Server) handleLogout(c echo.Context) error {
	if s.deps.Owner != nil {
		if err := s.deps.Owner.Logout(c.Response(), c.Request()); err != nil {
			return err
		}
	}
	return c.Redirect(http.StatusSeeOther, views.RouteLogin)
}

// tooManyTokensError is the 429 of a wrong owner token from an address past
// its limit.
type tooManyTokensError struct{ *ownerauth.ErrTooMany }

// tooManyTokens returns the 429 (with Retry-After) of many.
func tooManyTokens(many *ownerauth.ErrTooMany) error { return tooManyTokensError{many} }

// ErrorCode returns core.CodeTooManyRequests.
func (tooManyTokensError) ErrorCode() string { return core.CodeTooManyRequests }

// ErrorName returns "TooManyTokens".
func (tooManyTokensError) ErrorName() string { return "TooManyTokens" }

// RetryAfter returns how long until the address's window ends.
func (e tooManyTokensError) RetryAfter() time.Duration { return e.ErrTooMany.RetryAfter }

// retryAfter writes a Retry-After value: whole seconds, rounded up.
func retryAfter(d time.Duration) string { return strconv.Itoa(int(math.Ceil(d.Seconds()))) }

// streamRegistry holds the cancel functions of open share streams, by
// link, so that revoking a link ends its streams at once.
type streamRegistry struct {
	mu sync.Mutex
	m  map[string]map[*context.CancelFunc]struct{}
}

func (r *streamRegistry) add(id string, cancel context.CancelFunc) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[*context.CancelFunc]struct{}{}
	}
	if r.m[id] == nil {
		r.m[id] = map[*context.CancelFunc]struct{}{}
	}
	key := &cancel
	r.m[id][key] = struct{}{}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.m[id], key)
		if len(r.m[id]) == 0 {
			delete(r.m, id)
		}
	}
}

// end cancels the open streams of link id.
func (r *streamRegistry) end(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.m[id] {
		(*c)()
	}
}
