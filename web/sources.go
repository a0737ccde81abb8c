package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
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
