package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/model"
	"prism/core/redact"
	"prism/web"
)

// TestSecretsNeverLeak runs the whole server against a fake provider that
// echoes the Authorization header and the request URL in its error, with
// a base URL carrying user:password@ and ?api_key=. Neither the key nor
// those credentials may appear anywhere the error goes: the session page,
// its live stream, the JSONL export, the session list, the log (the
// startup lines included) and the database file.
func TestSecretsNeverLeak(t *testing.T) {
	const (
		key   = "sk-live-0123456789abcdef"
		pass  = "pa55-w0rd-secret"
		query = "qk-query-secret-987"
	)
	secrets := []string{key, pass, query}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"rejected %s for %s","type":"invalid_request_error","code":"invalid_api_key"}}`,
			r.Header.Get("Authorization"), r.URL.String())
	}))
	defer upstream.Close()
	baseURL := strings.Replace(upstream.URL, "://", "://bob:"+pass+"@", 1) + "/v1?api_key=" + query

	t.Setenv("PRISM_API_KEY", key)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "prism.db")
	cfg, err := parseServeFlags([]string{"--db", dbPath, "--no-demo", "--base-url", baseURL, "--workspace", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := newLogger(&logs, slog.LevelDebug, model.NewScrubber(apiKey(), cfg.agent.baseURL))
	ctx := t.Context()
	deps, release, err := openBackend(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	deps.Logger = logger
	if deps.Redactor, err = redact.New(); err != nil {
		t.Fatal(err)
	}
	srv := web.New(deps)
	ts := httptest.NewServer(srv.Handler())
	defer func() {
		ts.Close()
		srv.Close()
		release()
	}()

	ended := make(chan string, 1)
	remove := deps.Commits.OnCommit(func(id string, events []core.Event) {
		for _, e := range events {
			if e.Type == core.EventTurnEnd {
				ended <- id
			}
		}
	})
	defer remove()
	res, body := post(t, ts.URL+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"hello"}`))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("start: %d %s", res.StatusCode, body)
	}
	var id string
	select {
	case id = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn never ended")
	}

	get := func(path string) string {
		t.Helper()
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, res.StatusCode, b)
		}
		return string(b)
	}
	shown := map[string]string{
		"page":   get("/sessions/" + id),
		"export": get("/api/sessions/" + id + "/events"),
		"list":   get("/api/sessions"),
	}
	// The stream replays the log from the start; read it until the failed
	// turn's message has arrived.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, ts.URL+"/sessions/"+id+"/stream", nil)
	sres, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var stream strings.Builder
	sc := bufio.NewScanner(sres.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && !strings.Contains(stream.String(), "rejected Bearer") {
		stream.WriteString(sc.Text() + "\n")
	}
	sres.Body.Close()
	shown["stream"] = stream.String()

	for what, text := range shown {
		if !strings.Contains(text, "rejected Bearer "+model.Redacted) && what != "list" {
			t.Errorf("the %s does not show the provider's (scrubbed) error", what)
		}
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the %s leaks %q", what, s)
			}
		}
	}

	ts.Close()
	srv.Close()
	release()
	release = func() {}
	if !strings.Contains(logs.String(), "agent runner") || !strings.Contains(logs.String(), "rejected Bearer") {
		t.Errorf("the log lacks the startup line or the failure:\n%s", logs.String())
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log leaks %q:\n%s", s, logs.String())
		}
	}
	files, _ := filepath.Glob(dbPath + "*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("the database file %s holds %q", filepath.Base(f), s)
			}
		}
	}
}
