package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/views"
)

// deleter returns the Deleter, or the 503 of a server without one.
func (s *Server) deleter() (Deleter, error) {
	if s.deps.Deleter == nil {
		return nil, core.Errorf(core.CodeUnavailable, "deleting sessions is not configured on this server")
	}
	return s.deps.Deleter, nil
}

// deleteSession deletes session id unless this server is running its
// turn (then core.CodeConflict: cancel first). Pages open on it learn
// through the commit feed.
func (s *Server) deleteSession(c echo.Context) (DeletedSession, error) {
	d, err := s.deleter()
	if err != nil {
		return DeletedSession{}, err
	}
	id, err := param(c, "id")
	if err != nil {
		return DeletedSession{}, err
	}
	ctx := c.Request().Context()
	sum, err := s.deps.Sessions.Summary(ctx, id)
	if err != nil {
		return DeletedSession{}, err
	}
	if sum.Status == core.StatusRunning && s.owns(id) {
		return DeletedSession{}, core.Errorf(core.CodeConflict, "session %s is running: cancel its turn before deleting it", id)
	}
	return d.DeleteSession(ctx, id)
}

// handleAPIDelete handles DELETE /api/sessions/:id → 200 {id, subagents,
// events, shares}: what went with the session.
func (s *Server) handleAPIDelete(c echo.Context) error {
	d, err := s.deleteSession(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// handleDelete handles POST /sessions/:id/delete, the page's confirmed
// delete button: it deletes and goes back to the session list.
func (s *Server) handleDelete(c echo.Context) error {
	if _, err := s.deleteSession(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.HomeURL(""))
}

// deletePanel is the session page's delete button, nil without a Deleter.
func (s *Server) deletePanel(id string, running bool, share *views.SharePanelView) *views.DeletePanelView {
	if s.deps.Deleter == nil {
		return nil
	}
	p := &views.DeletePanelView{URL: views.DeleteURL(id), Running: running && s.owns(id)}
	if share != nil {
		for _, l := range share.Links {
			if !l.Revoked && !l.Expired {
				p.Shares++
			}
		}
	}
	return p
}
