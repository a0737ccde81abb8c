package web_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"prism/backend"
	"prism/core/redact"
	"prism/db"
	"prism/sources/claudecode"
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

// claudeShareEnv is a share env over a store that imports Claude Code
// transcripts, with the fixture imported as the CLI imports it (the
// children's link notes written after).
func claudeShareEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	feed := &backend.Feed{}
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: testLogger(), Committed: feed.Publish,
		Foreign: []dsh.Foreign{claudecode.Format()}})
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
	res, err := st.ImportFile(ctx, filepath.Join("testdata", "ccsubagent", "-repo", ccSession+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, x := range res {
		if x.ParentID != "" {
			children = append(children, x.SessionID)
		}
	}
	if len(children) != 1 || children[0] != claudecode.ChildID(ccSession, ccAgent) {
		t.Fatalf("the fixture imported children %v, want [%s]", children, claudecode.ChildID(ccSession, ccAgent))
	}
	if errs := watch.LinkImported(ctx, st, children); len(errs) > 0 {
		t.Fatal(errs)
	}
	return &env{ts: ts, store: st, feed: feed, srv: srv}
}

// TestShareChildren_claudeCodeAgentIDHidden: a link made with its children
// of an imported Claude Code session never shows its child's session id
// nor the agentId it is made of (<session>-agent-<agentId>: the session's
// id is on the link), in any byte of its page, saved page, JSONL, the
// files the page links, nor its stream — redacted or not; the child is
// nested as child-1 and the agentId the parent's events carry is child-1
// too.
func TestShareChildren_claudeCodeAgentIDHidden(t *testing.T) {
	e := claudeShareEnv(t)
	child := claudecode.ChildID(ccSession, ccAgent)
	leaks := func(what, got string) {
		t.Helper()
		for _, w := range []string{child, ccAgent} {
			if i := strings.Index(got, w); i >= 0 {
				t.Errorf("%s shows %q: %q", what, w, got[max(0, i-160):min(len(got), i+60)])
			}
		}
	}
	for _, body := range []string{`{"children":true}`, `{"children":true,"redact":false}`} {
		l, _ := shareLinksOf2(t, e, ccSession, body)
		st := e.stream(t, l.Stream(-1))
		leaks(body+": the stream's first frame", strings.Join(st.next(t).Data, "\n"))
		_, page := e.get(t, l.Page())
		leaks(body+": the page", page)
		if !strings.Contains(page, `data-child="child-1"`) || !strings.Contains(page, "git log -p") {
			t.Errorf("%s: the page does not nest the child as child-1 with its Bash card", body)
		}
		if !strings.Contains(page, "agentId: child-1") {
			t.Errorf("%s: the Agent call's output does not name the agentId child-1", body)
		}
		paths := []string{l.Events(), l.ExportHTML()}
		for _, m := range regexp.MustCompile(`(?:href|action|src)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			if strings.HasPrefix(m[1], l.Page()+"/") {
				paths = append(paths, strings.ReplaceAll(m[1], "&amp;", "&"))
			}
		}
		for _, path := range paths {
			_, got := e.get(t, path)
			leaks(body+": GET "+path, got)
		}
	}
}
