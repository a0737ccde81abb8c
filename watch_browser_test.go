package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"prism/core/redact"
	"prism/sources/claudecode"
	"prism/web"
)

// TestWatchSubagentInBrowser watches a Claude Code projects folder with
// the whole stack and a real browser: the session appears on the open
// list; its Agent call shows pending on the open session page; the
// subagent's transcript (current layout, linked by its .meta.json) appears
// on the list nested under the session (its "1 subagent" button); and the call completes on the
// page when its result line lands — all live, without a reload.
func TestWatchSubagentInBrowser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects")
	project := filepath.Join(dir, "-home-dev-app")
	const sid = "5a1d0000-0000-4000-8000-00000000b0b0"
	c := claudeLines{sid: sid}
	if err := os.MkdirAll(filepath.Join(project, sid, "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	main, err := os.OpenFile(filepath.Join(project, sid+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close()
	if _, err := main.WriteString(c.prompt("Investigate")); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeFlags([]string{"--db", filepath.Join(t.TempDir(), "prism.db"), "--no-demo", "--watch", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := quietLog()
	deps, release, err := openBackend(t.Context(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if deps.Redactor, err = redact.New(cfg.RedactRules...); err != nil {
		t.Fatal(err)
	}
	deps.Logger = log
	srv := web.New(deps)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close(); release() })

	ctx := headless(t)
	child := claudecode.ChildID(sid, "c1")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/sessions/"+sid),
		chromedp.WaitVisible(`[data-testid="session-head"]`),
	); err != nil {
		t.Fatalf("open the session page: %v", err)
	}
	if _, err := main.WriteString(c.agentCall(1, "Agent", "Find the regression")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`[data-call-id="toolu_1"][data-state="pending"]`)); err != nil {
		t.Fatalf("the Agent call never showed pending: %v", err)
	}
	if err := os.WriteFile(filepath.Join(project, sid, "subagents", "agent-c1.meta.json"), []byte(`{"agentType":"general-purpose","toolUseId":"toolu_1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, sid, "subagents", "agent-c1.jsonl"), []byte(c.childLines("c1", "Find the regression")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The watcher stores the child within a poll or two: wait for the
	// list to have it (each GET is a round trip, no sleeping).
	for deadline := time.Now().Add(time.Minute); ; {
		res, err := http.Get(ts.URL + "/sessions/" + child)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never stored the child %s", child)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(`[data-session-id="`+sid+`"] [data-testid="row-kids"]`),
		chromedp.WaitReady(`[data-session-id="`+child+`"][data-parent="`+sid+`"]`),
		chromedp.Navigate(ts.URL+"/sessions/"+sid),
		chromedp.WaitVisible(`[data-call-id="toolu_1"][data-state="pending"]`),
	); err != nil {
		t.Fatalf("the child session on the list: %v", err)
	}
	if _, err := main.WriteString(c.agentResult(1, "c1", "completed")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`[data-call-id="toolu_1"][data-state="ok"]`)); err != nil {
		t.Fatalf("the Agent call never completed: %v", err)
	}
}
