package main

import (
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
	"prism/web"
)

// TestWatchSubagentBeforeParent serves a watched Claude Code projects
// folder in which a subagent's transcript (current layout, no sidecar)
// is written whole before its parent's: the child shows on its own
// first; once the parent's transcript is written (the Agent call, and
// its result naming the child's agentId), the child, whose file never
// changes again, is nested in the parent's Agent card on the parent's
// page and listed under the parent.
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
	if err := os.WriteFile(filepath.Join(project, sid+".jsonl"),
		[]byte(c.prompt("Investigate")+c.agentCall(1, "Agent", "Find the regression")+c.agentResult(1, "c1", "completed")), 0o644); err != nil {
		t.Fatal(err)
	}
	await("/sessions/"+sid, regexp.MustCompile(`data-child="`+child+`"\s+data-child-status=`), "the child nested in its parent's Agent card")
	if b := get("/"); !nested.Match(b) {
		t.Error("the list does not have the child under its parent")
	}
}
