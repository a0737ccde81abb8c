package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServe runs `prism serve` on a free loopback port: it serves the
// health check, the session list and the demo session, and stops when its
// context ends.
func TestServe(t *testing.T) {
	t.Setenv("PRISM_ADDR", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--db", t.TempDir() + "/prism.db"}, io.Discard, pw)
		pw.Close()
	}()

	urlRE := regexp.MustCompile(`url=(http://\S+)`)
	sc := bufio.NewScanner(pr)
	base := ""
	for base == "" && sc.Scan() {
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if base == "" {
		t.Fatal("serve never logged its url")
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("serve bound %s, want loopback", base)
	}
	for _, path := range []string{"/healthz", "/", "/static/datastar.js"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("GET %s = %d", path, res.StatusCode)
		}
	}
	// An empty database gets one scripted demo session.
	res, err := http.Get(base + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ ID, Status string }
	err = json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if err != nil || len(list) != 1 {
		t.Fatalf("GET /api/sessions = %+v, %v; want the one demo session", list, err)
	}
	res, err = http.Get(base + "/sessions/" + list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("GET the demo session's page = %d", res.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestParseServeFlags(t *testing.T) {
	t.Setenv("PRISM_ADDR", "")
	t.Setenv("PRISM_DB", "/data/x.db")
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil || cfg.Addr != "127.0.0.1:8080" || cfg.DB != "/data/x.db" {
		t.Errorf("defaults = %+v, %v", cfg, err)
	}
	cfg, err = parseServeFlags([]string{"--addr", ":9"}, io.Discard)
	if err != nil || cfg.Addr != ":9" {
		t.Errorf("--addr = %+v, %v", cfg, err)
	}
	if _, err := parseServeFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
}
