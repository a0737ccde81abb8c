package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core/redact"
	"prism/web"
)

// getDoc GETs path from srv and parses the page.
func getDoc(t *testing.T, srv *httptest.Server, path string) *goquery.Document {
	t.Helper()
	res, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", path, res.StatusCode, body)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSourceInfoHeaderSourcesAndHint runs the stack on a machine whose home
// has Claude Code's projects with a transcript in them: the list says the
// server can watch them (with the command) and reads nothing from them;
// /sources, linked from the list, has the watched folder's row; a
// transcript imported shows its source small beside the header ("Claude
// Code 2.1.3 · ~/app · main"), recorded beside the header, not in it.
func TestSourceInfoHeaderSourcesAndHint(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	projects := filepath.Join(home, ".claude", "projects", "-home-dev-app")
	if err := os.MkdirAll(projects, 0o755); err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile("sources/claudecode/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// The transcript's cwd is under this home, so the header shortens it.
	plain = bytes.ReplaceAll(plain, []byte(`"cwd":"/home/dev/app"`), []byte(`"cwd":"`+home+`/app"`))
	const id = "7d3e0c1a-0000-4000-8000-00000000c0de"
	transcript := filepath.Join(projects, id+".jsonl")
	if err := os.WriteFile(transcript, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	other := t.TempDir() // watched, empty: the hint still names ~/.claude/projects
	cfg, err := parseServeFlags([]string{"--db", dbPath, "--no-demo", "--watch", other}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	deps, release, err := openBackend(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	deps.Logger = quietLog()
	if deps.Redactor, err = redact.New(cfg.RedactRules...); err != nil {
		t.Fatal(err)
	}
	srv := web.New(deps)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close(); release() })

	list := getDoc(t, ts, "/")
	hint := list.Find(`[data-testid="watch-hint"]`)
	if cmd := hint.Find(`[data-testid="watch-command"]`).Text(); cmd != "prism serve --watch=claude" || !strings.Contains(hint.Text(), filepath.Join(home, ".claude", "projects")) {
		t.Errorf("list hint = %q (command %q)", hint.Text(), cmd)
	}
	if n := list.Find(`[data-testid="session-row"]`).Length(); n != 0 {
		t.Errorf("the list shows %d sessions: the hint's folder was read before being asked", n)
	}
	href, _ := list.Find(`[data-testid="sources-link"]`).Attr("href")
	sources := getDoc(t, ts, href)
	rows := sources.Find(`[data-testid="source-row"]`)
	if rows.Length() != 1 || !strings.Contains(rows.Text(), other) {
		t.Errorf("/sources rows = %d: %q", rows.Length(), rows.Text())
	}

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, transcript}, &out, &errOut); code != 0 {
		t.Fatalf("import: %d %s", code, errOut.String())
	}
	page := getDoc(t, ts, "/sessions/"+id)
	line := page.Find(`[data-testid="source-line"]`)
	if got := line.Find(`[data-testid="source-what"]`).Text(); got != "Claude Code 2.1.3 · ~/app · main" {
		t.Errorf("source line = %q", got)
	}
	if f, _ := line.Attr("title"); f != transcript {
		t.Errorf("source line's file = %q, want %q", f, transcript)
	}
}
