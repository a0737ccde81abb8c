package web_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/backend"
	"prism/core/redact"
	"prism/db"
	"prism/sources/claudecode"
	"prism/sources/codex"
	"prism/sources/dsh"
	"prism/sources/watch"
	"prism/web"
)

// The Claude Code fixture with one subagent (web/testdata/ccsubagent): the
// main transcript of session ccSession, whose Agent call's result names
// the child's agentId, and the child's own transcript beside it.
const (
	ccSession = "7c1e5d2a-0b3f-4e6a-9d8c-1f2e3a4b5c6d"
	ccAgent   = "a7f2c1d"
)

// foreignShareEnv is a share env over a store that imports Claude Code
// and Codex transcripts, with files imported as the CLI imports them (the
// children's link notes written after); it returns the imported
// children's ids.
func foreignShareEnv(t *testing.T, files ...string) (*env, []string) {
	t.Helper()
	ctx := context.Background()
	feed := &backend.Feed{}
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: testLogger(), Committed: feed.Publish,
		Foreign: []dsh.Foreign{claudecode.Format(), codex.Format()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := redact.New()
	if err != nil {
		t.Fatal(err)
	}
	d := web.Deps{Sessions: backend.Source{Store: st}, Commits: feed, Importer: backend.Importer{Store: st}, Search: backend.Search{Store: st},
		Presenter: presenters(t), Logger: testLogger(), Shares: st, Notes: st, Redactor: r}
	srv := web.New(d)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	var children []string
	for _, f := range files {
		res, err := st.ImportFile(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range res {
			if x.ParentID != "" {
				children = append(children, x.SessionID)
			}
		}
	}
	if errs := watch.LinkImported(ctx, st, children); len(errs) > 0 {
		t.Fatal(errs)
	}
	return &env{ts: ts, store: st, feed: feed, srv: srv}, children
}

// noneServed checks every byte link bodies serves — its page, stream,
// JSONL, saved page and the files the page links, for each body — for
// secrets, and that the page nests child-1; e makes the links of session.
func noneServed(t *testing.T, e *env, session string, secrets []string, pageHas ...string) {
	t.Helper()
	leaks := func(what, got string) {
		t.Helper()
		for _, w := range secrets {
			if i := strings.Index(got, w); i >= 0 {
				t.Errorf("%s shows %q: %q", what, w, got[max(0, i-160):min(len(got), i+60)])
			}
		}
	}
	for _, body := range []string{`{"children":true}`, `{"children":true,"redact":false}`} {
		l, _ := shareLinksOf2(t, e, session, body)
		leaks(body+": the stream", streamed(t, e, l, `data-child="child-1"`))
		_, page := e.get(t, l.Page())
		leaks(body+": the page", page)
		for _, want := range append([]string{`data-child="child-1"`}, pageHas...) {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the page does not show %s", body, want)
			}
		}
		for _, path := range sharePaths(l, page) {
			_, got := e.get(t, path)
			leaks(body+": GET "+path, got)
		}
	}
}

// TestShareChildren_claudeCodeAgentIDHidden: a link made with its children
// of an imported Claude Code session never shows its child's session id
// nor the agentId it is made of (<session>-agent-<agentId>: the session's
// id is on the link), in any byte of its page, saved page, JSONL, the
// files the page links, nor its stream — redacted or not; the child is
// nested as child-1 and the agentId the parent's events carry is child-1
// too.
func TestShareChildren_claudeCodeAgentIDHidden(t *testing.T) {
	e, children := foreignShareEnv(t, filepath.Join("testdata", "ccsubagent", "-repo", ccSession+".jsonl"))
	child := claudecode.ChildID(ccSession, ccAgent)
	if len(children) != 1 || children[0] != child {
		t.Fatalf("the fixture imported children %v, want [%s]", children, child)
	}
	noneServed(t, e, ccSession, []string{child, ccAgent}, "git log -p", "agentId: child-1")
}

// TestShareChildren_codexThreadIDHidden: a Codex child thread's id is its
// whole session id, which the parent's spawn_agent output and a wait
// call's arguments and output carry: a link made with its children of
// the imported parent shows child-1 there and never the thread id.
func TestShareChildren_codexThreadIDHidden(t *testing.T) {
	const parent, child = "0196a1b2-0000-7000-8000-0000000000a1", "0196a1b2-0000-7000-8000-0000000000a2"
	day := filepath.Join("testdata", "codexchild", "2026", "05", "01")
	e, children := foreignShareEnv(t, filepath.Join(day, "rollout-2026-05-01T10-00-00-"+parent+".jsonl"),
		filepath.Join(day, "rollout-2026-05-01T10-00-08-"+child+".jsonl"))
	if len(children) != 1 || children[0] != child {
		t.Fatalf("the fixture imported children %v, want [%s]", children, child)
	}
	noneServed(t, e, parent, []string{child}, "child-1")
	l, _ := shareLinksOf2(t, e, parent, `{"children":true}`)
	if _, jsonl := e.get(t, l.Events()); !strings.Contains(jsonl, `{\"agent_id\":\"child-1\"`) || !strings.Contains(jsonl, `{\"ids\":[\"child-1\"]`) {
		t.Errorf("the JSONL does not name the thread child-1 in the spawn_agent output and the wait call: %s", jsonl)
	}
}

// TestShareChildren_codexCollabStatusesKeyed: Codex's collab_waiting_end
// event keys its statuses map by the child thread's id, and the record is
// kept as it was (source/raw): a link made with its children names that
// key child-1 in its JSONL, page and saved page, never the thread id.
func TestShareChildren_codexCollabStatusesKeyed(t *testing.T) {
	const parent, child = "0196a1b2-0000-7000-8000-0000000000a1", "0196a1b2-0000-7000-8000-0000000000a2"
	src := filepath.Join("testdata", "codexchild", "2026", "05", "01")
	dir := filepath.Join(t.TempDir(), "2026", "05", "01")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pname := "rollout-2026-05-01T10-00-00-" + parent + ".jsonl"
	cname := "rollout-2026-05-01T10-00-08-" + child + ".jsonl"
	pb, err := os.ReadFile(filepath.Join(src, pname))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := os.ReadFile(filepath.Join(src, cname))
	if err != nil {
		t.Fatal(err)
	}
	collab := `{"timestamp":"2026-05-01T10:00:40.100Z","type":"event_msg","payload":{"type":"collab_waiting_end","sender_thread_id":"` +
		parent + `","call_id":"call_W","statuses":{"` + child + `":{"completed":"abc123"}}}}` + "\n"
	lines := strings.SplitAfter(string(pb), "\n") // the last line, task_complete, ends with a newline
	rollout := strings.Join(lines[:len(lines)-2], "") + collab + strings.Join(lines[len(lines)-2:], "")
	if err := os.WriteFile(filepath.Join(dir, pname), []byte(rollout), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, cname), cb, 0o644); err != nil {
		t.Fatal(err)
	}
	e, children := foreignShareEnv(t, filepath.Join(dir, pname), filepath.Join(dir, cname))
	if len(children) != 1 || children[0] != child {
		t.Fatalf("imported children %v, want [%s]", children, child)
	}
	for _, body := range []string{`{"children":true}`, `{"children":true,"redact":false}`} {
		l, _ := shareLinksOf2(t, e, parent, body)
		_, jsonl := e.get(t, l.Events())
		if !strings.Contains(jsonl, `"statuses":{"child-1":{"completed":"abc123"}}`) {
			t.Errorf("%s: the JSONL does not key the statuses by child-1: %s", body, jsonl)
		}
		for _, p := range []string{l.Events(), l.Page(), l.ExportHTML()} {
			if _, got := e.get(t, p); strings.Contains(got, child) {
				i := strings.Index(got, child)
				t.Errorf("%s: GET %s shows the thread id: %q", body, p, got[max(0, i-200):min(len(got), i+60)])
			}
		}
	}
}
