package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/agent/agenttest"
	"prism/db"
	"prism/web"
)

// TestCLI_exportHTML: `prism export --html` writes the server's
// export.html — the same renderer, byte for byte but for the note's time —
// a self-contained file with every card and no script.
func TestCLI_exportHTML(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	_, events := agenttest.DemoLog(t, 1767225600000)
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, core.SessionHeader{ID: "demo", CreatedAt: 1767225600000, Cwd: "/work"}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "demo", events); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"export", "--html", "--db", dbPath, "demo"}, &out, &errOut); code != 0 {
		t.Fatalf("export --html: exit %d: %s", code, errOut.String())
	}
	file := out.String()
	calls := 0
	for _, e := range events {
		if e.Type == core.EventToolCall {
			calls++
		}
	}
	if !strings.HasPrefix(file, "<!doctype html>") || strings.Contains(file, "<script") || strings.Count(file, `data-testid="tool-card"`) != calls {
		t.Errorf("export --html: doctype %v, script %v, %d cards for %d calls", strings.HasPrefix(file, "<!doctype html>"),
			strings.Contains(file, "<script"), strings.Count(file, `data-testid="tool-card"`), calls)
	}

	reg, err := backend.Presenters(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Deps{Sessions: backend.Source{Store: st}, Presenter: reg})
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	res, err := ts.Client().Get(ts.URL + "/sessions/demo/export.html")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	st.Close()
	note := regexp.MustCompile(`Exported from prism on [^.<]*\.`)
	if a, b := note.ReplaceAllString(file, "NOTE"), note.ReplaceAllString(string(served), "NOTE"); a != b {
		t.Errorf("the CLI's file differs from the server's export.html (%d and %d bytes)", len(a), len(b))
	}
	if code := run(ctx, []string{"export", "--html", "--db", dbPath, "missing"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "session missing not found") {
		t.Errorf("export --html of a missing session: exit %d, stderr %q", code, errOut.String())
	}
}
