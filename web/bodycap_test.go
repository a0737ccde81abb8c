package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"prism/core"
	"prism/web"
	"prism/web/ownerauth"
)

// TestBodyLimit_routeCapNamed: under the server's default cap (1 MiB), a
// route with a smaller cap of its own refuses a larger body — declared or
// chunked — with a 413 naming its own cap, never the server's.
func TestBodyLimit_routeCapNamed(t *testing.T) {
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Runner, d.Approvals, d.Owner = &fakeRunner{}, fakeApprovals{}, guard
	})
	e.session(t, "s", nil)
	auth := []string{"Authorization", "Bearer " + ownerToken}
	const form, js = "application/x-www-form-urlencoded", "application/json"
	big := strings.Repeat("a", 2<<20)
	for _, r := range []struct{ path, ct, body, cap string }{
		{"/api/sessions/s/approval-policy", js, `{"policy":"` + big + `"}`, "4 KiB"},
		{"/api/sessions/s/approvals/a1", js, `{"decision":"approve","note":"` + big + `"}`, "64 KiB"},
		{"/sessions/s/approvals/a1", form, "decision=approve&note=" + big, "64 KiB"},
		{"/api/sessions/s/shares", js, `{"label":"` + big + `"}`, "64 KiB"},
		{"/api/sessions/s/shares/preview", js, "{" + strings.Repeat(" ", 2<<20) + "}", "64 KiB"},
		{"/sessions/s/shares", form, "scope=live&label=" + big, "64 KiB"},
		{"/login", form, "token=" + big, "64 KiB"},
	} {
		for _, body := range []io.Reader{strings.NewReader(r.body), unsized{strings.NewReader(r.body)}} {
			a := e.ask(t, http.MethodPost, r.path, r.ct, body, auth...)
			if a.status != http.StatusRequestEntityTooLarge || a.code != core.CodeTooLarge ||
				!strings.Contains(a.msg, "limit of "+r.cap) || strings.Contains(a.msg, "1 MiB") {
				t.Errorf("POST %s, 2 MiB (%T): %d %s %q; want 413 naming the route's %s", r.path, body, a.status, a.code, a.msg, r.cap)
			}
		}
	}
	// A route without a cap of its own names the server's.
	a := e.ask(t, http.MethodPost, "/api/sessions", js, strings.NewReader(`{"prompt":"`+big+`"}`), auth...)
	if a.status != http.StatusRequestEntityTooLarge || !strings.Contains(a.msg, "limit of 1 MiB") {
		t.Errorf("POST /api/sessions, 2 MiB: %d %q; want 413 naming 1 MiB", a.status, a.msg)
	}
}
