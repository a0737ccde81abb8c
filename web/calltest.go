package web

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/views"
	"prism/views/testgen"
)

// handleCallTest handles GET /sessions/:id/calls/:callId/test.zip: the
// call saved as a test ("save as test", what prism testgen writes) — a zip
// of one directory holding NAME_test.go, testdata/NAME.call.json and
// testdata/NAME.golden, the cards rendered with this server's presenters.
// ?card= picks one of several cards of a reused call id. A call without a
// result is a 404.
func (s *Server) handleCallTest(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	callID, err := param(c, "callId")
	if err != nil {
		return err
	}
	var t *views.Timeline
	for _, ref := range views.CallRefs(callID) {
		if t, err = s.callFold(ctx, id, ref, s.ownerFold); err != nil {
			return err
		}
		if len(t.CardsByCallID(ref)) > 0 {
			break
		}
	}
	card, err := testgen.Find(t, id, callID, c.QueryParam("card"))
	if errors.Is(err, testgen.ErrNoCall) {
		return core.Errorf(core.CodeNotFound, "%v", err)
	} else if err != nil {
		return err
	}
	if card.Result == nil {
		return core.Errorf(core.CodeNotFound, "call %q has no result yet: only a completed call can be saved as a test", card.CallID)
	}
	rec, err := testgen.FromCard(t.Header(), card)
	if err != nil {
		return err
	}
	name := testgen.DefaultName(rec)
	files, err := testgen.Files(ctx, s.deps.Presenter, rec, testgen.Options{Name: name, Package: testgen.PackageName(name)})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := testgen.WriteZip(&buf, name, time.UnixMilli(rec.ResultTime), files); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": name + ".zip"}))
	return c.Blob(http.StatusOK, "application/zip", buf.Bytes())
}
