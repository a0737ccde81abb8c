package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"prism/backend"
	"prism/core/redact"
	"prism/web"
)

// TestLiveShareBrowser opens a share link, served by the share listener's
// handler, in headless Chromium while a scripted session runs: the reader
// sees the running call's card pending, then completed, without a reload;
// the owner revokes the link, the page's stream ends saying so, and a
// reload shows the share 404 page.
func TestLiveShareBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	red, err := redact.New()
	if err != nil {
		t.Fatal(err)
	}
	g := startGateSession(t, func(d *web.Deps) { d.Redactor = red; d.Shares = d.Sessions.(backend.Source).Store.(web.ShareStore) })
	srv, id := g.srv, g.id
	owner := httptest.NewServer(srv.Handler())
	shares := httptest.NewServer(srv.ShareHandler())
	t.Cleanup(func() { owner.Close(); shares.Close() })

	// The owner makes a live link.
	res, err := http.Post(owner.URL+"/api/sessions/"+id+"/shares", "application/json", strings.NewReader(`{"label":"watch"}`))
	if err != nil {
		t.Fatal(err)
	}
	var link struct{ ID, URL string }
	if err := json.NewDecoder(res.Body).Decode(&link); err != nil || res.StatusCode != 201 {
		t.Fatalf("create link: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	u, _ := url.Parse(link.URL)
	shareURL := shares.URL + u.Path

	bctx := browser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(shareURL),
		chromedp.WaitReady(chromedp.CSS(`[data-call-id="gate-1"][data-state="pending"]`))); err != nil {
		t.Fatalf("the pending card on the share page: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`window.__fetch.includes('started')`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the share page's stream never started: %v", err)
	}
	// Read-only: no follow-up, cancel or share controls.
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('form, [data-testid="share-panel"]').length`)); err != nil || n != 0 {
		t.Errorf("the share page has %d forms or share panels (%v)", n, err)
	}
	g.release()
	if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`[data-call-id="gate-1"][data-state="ok"]`))); err != nil {
		t.Fatalf("the card never completed on the share page: %v", err)
	}
	states, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.__states`))
	if err != nil || len(states) < 2 || states[0] != "added:pending" || states[len(states)-1] != "attr:ok" {
		t.Errorf("card states seen by the share page = %v (%v), want added:pending … attr:ok", states, err)
	}
	if nav, err := chromedp.Run(bctx, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`)); err != nil || nav != 1 {
		t.Errorf("navigations = %d (%v), want 1: no reload", nav, err)
	}

	// Revoke: the open stream ends, saying so; a reload is the 404 page.
	req, _ := http.NewRequest(http.MethodDelete, owner.URL+"/api/shares/"+link.ID, nil)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 204 {
		t.Fatalf("revoke: %v %v", res, err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`[data-testid="stream-status"]`))); err != nil {
		t.Fatalf("the page never heard of the revocation: %v", err)
	}
	msg, err := chromedp.Run(bctx, chromedp.Text[string](`[data-testid="stream-status"]`))
	if err != nil || !strings.Contains(msg, "revoked") {
		t.Errorf("stream status %q (%v)", msg, err)
	}
	if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`[data-testid="share-not-found"]`))); err != nil {
		t.Errorf("reload after revoking: %v", err)
	}
}
