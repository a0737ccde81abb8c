package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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
	// The client waits for the server's answer before it sends a declared
	// body (Expect: 100-continue): a body refused unread is never written
	// into a connection the server closes.
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	t.Cleanup(client.CloseIdleConnections)
	ask := func(path, ct string, body io.Reader) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, e.base()+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+ownerToken)
		req.Header.Set("Expect", "100-continue")
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer res.Body.Close()
		var j struct{ Code, Error string }
		_ = json.NewDecoder(res.Body).Decode(&j)
		return res.StatusCode, j.Code, j.Error
	}
	const form, js = "application/x-www-form-urlencoded", "application/json"
	for _, r := range []struct {
		path, ct, prefix, suffix string
		cap                      int
		capText                  string
	}{
		{"/api/sessions/s/approval-policy", js, `{"policy":"`, `"}`, 4 << 10, "4 KiB"},
		{"/api/sessions/s/approvals/a1", js, `{"decision":"approve","note":"`, `"}`, 64 << 10, "64 KiB"},
		{"/sessions/s/approvals/a1", form, "decision=approve&note=", "", 64 << 10, "64 KiB"},
		{"/api/sessions/s/shares", js, `{"label":"`, `"}`, 64 << 10, "64 KiB"},
		{"/api/sessions/s/shares/preview", js, `{"label":"`, `"}`, 64 << 10, "64 KiB"},
		{"/sessions/s/shares", form, "scope=live&label=", "", 64 << 10, "64 KiB"},
		{"/login", form, "token=", "", 64 << 10, "64 KiB"},
	} {
		// Declared: 2 MiB, over the server's cap too. Chunked: just over
		// the route's.
		declared := r.prefix + strings.Repeat("a", 2<<20) + r.suffix
		chunked := r.prefix + strings.Repeat("a", r.cap) + r.suffix
		for _, body := range []io.Reader{strings.NewReader(declared), unsized{strings.NewReader(chunked)}} {
			status, code, msg := ask(r.path, r.ct, body)
			if status != http.StatusRequestEntityTooLarge || code != core.CodeTooLarge ||
				!strings.Contains(msg, "limit of "+r.capText) || strings.Contains(msg, "1 MiB") {
				t.Errorf("POST %s (%T): %d %s %q; want 413 naming the route's %s", r.path, body, status, code, msg, r.capText)
			}
		}
	}
	// A route without a cap of its own names the server's.
	if status, _, msg := ask("/api/sessions", js, strings.NewReader(`{"prompt":"`+strings.Repeat("a", 2<<20)+`"}`)); status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "limit of 1 MiB") {
		t.Errorf("POST /api/sessions, 2 MiB: %d %q; want 413 naming 1 MiB", status, msg)
	}
}
