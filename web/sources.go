package web

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/views"
)

// WatchHint is an agent's session folder found on this machine that no
// --watch names (views.WatchHint).
type WatchHint = views.WatchHint

// handleSources handles GET /sources: the source-health page, one row per
// watched folder and kind of source and per other feed, as each registered
// reporter (Deps.Sources) says now.
func (s *Server) handleSources(c echo.Context) error {
	var rows []core.SourceHealth
	for _, r := range s.deps.Sources {
		rows = append(rows, r.SourceHealth()...)
	}
	v := views.NewSourcesView(s.meta("sources"), rows, s.deps.Watchable, time.Now())
	return s.render(c, http.StatusOK, views.SourcesPage(v))
}

// SourceInfos is a SessionSource that also says what a session was read
// from (another agent's file): the session header shows it small beside
// the title, and its title wins over the first prompt.
type SourceInfos interface {
	SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error)
}

// sourceLine fills the owner's page header of session id with its source
// info, when the store keeps some.
func (s *Server) sourceLine(ctx context.Context, id string, v *views.SessionPageView) {
	si, ok := s.deps.Sessions.(SourceInfos)
	if !ok {
		return
	}
	info, found, err := si.SourceInfo(ctx, id)
	if err != nil {
		s.log.Warn("read the source info of a session", logkey.SessionID, id, logkey.Err, err)
		return
	}
	if !found {
		return
	}
	home, _ := os.UserHomeDir()
	v.Head.Source = views.NewSourceLine(info, home)
	if info.Title != "" {
		v.Head.Title = info.Title
	}
}
