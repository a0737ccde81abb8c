package web_test

import (
	"context"

	"prism/core"
	"prism/web"
)

// ForkSession makes fakeRunner a web.Forker: it forks every session but
// "nope" (SESSION_NOT_FOUND) into "fork-1".
func (f *fakeRunner) ForkSession(_ context.Context, req web.ForkRequest) (string, error) {
	if req.Source == "nope" {
		return "", core.ForkError(core.CodeSessionNotFound, "cannot fork session %q: it does not exist", req.Source)
	}
	return "fork-1", nil
}
