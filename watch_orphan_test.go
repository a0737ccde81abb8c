package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"prism/core/redact"
	"prism/sources/claudecode"
	"prism/views"
	"prism/web"
)

// TestWatchSubagentBeforeParent serves a watched Claude Code projects
// folder in which a subagent's transcript (current layout, no sidecar)
// is written whole before its parent's: the child shows on its own
// first; once the parent's transcript is written it is listed under the
// parent, and once the result of the parent's Agent call names its
// agentId, the child, whose file never changed again, is nested in that
// call's card on the parent's open page (live) and on a page opened
// then.
func TestWatchSubagentBeforeParent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects")
	project := filepath.Join(dir, "-home-dev-app")
	const sid = "5a1d0000-0000-4000-8000-00000000b0b1"
	c := claudeLines{sid: sid}
	child := claudecode.ChildID(sid, "c1")
	if err := os.MkdirAll(filepath.Join(project, sid, "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, sid, "subagents", "agent-c1.jsonl"), []byte(c.childLines("c1", "Find the regression")), 0o644); err != nil {
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

	// get returns the body of GET path (nil unless 200).
	get := func(path string) []byte {
		t.Helper()
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			return nil
		}
		return b
	}
	// await GETs path until its body matches re (each GET a round trip,
	// the watcher polling meanwhile; no sleeping).
	await := func(path string, re *regexp.Regexp, what string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			if b := get(path); b != nil && re.Match(b) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never came", what)
			}
		}
	}
	await("/sessions/"+child, regexp.MustCompile(`data-call-id="toolu_900"`), "the child read before its parent")
	nested := regexp.MustCompile(`data-session-id="` + child + `"[^>]*data-parent="` + sid + `"`)
	if b := get("/"); !regexp.MustCompile(`data-session-id="`+child+`"`).Match(b) || nested.Match(b) {
		t.Fatal("the child read before its parent is not listed on its own")
	}
	// The parent's transcript: its Agent call (whose prompt is not the
	// child's first), the child's link not in yet.
	parent, err := os.OpenFile(filepath.Join(project, sid+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	if _, err := parent.WriteString(c.prompt("Investigate") + c.agentCall(1, "Agent", "Look into the build")); err != nil {
		t.Fatal(err)
	}
	await("/", nested, "the child listed under its parent once the parent's transcript exists")
	if b := get("/sessions/" + sid); !regexp.MustCompile(`data-call-id="toolu_1"`).Match(b) || regexp.MustCompile(`data-child=`).Match(b) {
		t.Fatal("the parent's page: want its Agent call, no child nested before the call's result names it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	page := openStream(t, ctx, ts.URL+views.SessionStreamURL(sid, -1))
	defer page.res.Body.Close()
	// The result naming the child's agentId: the open page nests the
	// child in the Agent card, live.
	if _, err := parent.WriteString(c.agentResult(1, "c1", "completed")); err != nil {
		t.Fatal(err)
	}
	page.until(t, regexp.MustCompile(`data-child="`+child+`"\s+data-child-status=`))
	await("/sessions/"+sid, regexp.MustCompile(`data-child="`+child+`"\s+data-child-status=`), "the child nested in its parent's Agent card")
}
