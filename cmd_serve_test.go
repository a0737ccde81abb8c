package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	t.Setenv("PRISM_REPAIR_INTERVAL", "")
	if cfg, err := parseServeFlags([]string{"--repair-interval", "500ms"}, io.Discard); err != nil || cfg.RepairInterval != 500*time.Millisecond {
		t.Errorf("--repair-interval 500ms = %v, %v", cfg.RepairInterval, err)
	}
	for _, bad := range []string{"soon", "0", "-2s", "2h"} {
		if _, err := parseServeFlags([]string{"--repair-interval", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "--repair-interval") {
			t.Errorf("--repair-interval %s: %v, want a refusal naming the flag", bad, err)
		}
	}
	if cfg, err := parseServeFlags(nil, io.Discard); err != nil || cfg.ImportMinRateKiB != 16 {
		t.Errorf("default --import-min-rate = %d, %v; want 16", cfg.ImportMinRateKiB, err)
	}
	if _, err := parseServeFlags([]string{"--import-min-rate", "-1"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--import-min-rate must be 0 (no minimum) or a positive number of KiB/s, got -1") {
		t.Errorf("--import-min-rate -1: %v", err)
	}
}

// TestServeOffLoopbackNeedsOwnerToken: prism refuses to listen on an
// address other machines reach without PRISM_OWNER_TOKEN, naming the fix;
// with one, it serves, asks for the token on every owner route, and
// --share-addr serves share links alone.
func TestServeOffLoopbackNeedsOwnerToken(t *testing.T) {
	t.Setenv("PRISM_OWNER_TOKEN", "")
	var stderr strings.Builder
	code := run(t.Context(), []string{"serve", "--addr", "0.0.0.0:0", "--no-demo", "--db", t.TempDir() + "/prism.db"}, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "PRISM_OWNER_TOKEN") || !strings.Contains(stderr.String(), "refusing to serve on 0.0.0.0:") {
		t.Fatalf("exit %d, stderr %q; want a refusal naming PRISM_OWNER_TOKEN", code, stderr.String())
	}
	t.Setenv("PRISM_OWNER_TOKEN", "short")
	stderr.Reset()
	if code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--db", t.TempDir() + "/prism.db"}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "at least 16") {
		t.Errorf("a short token: exit %d, %q", code, stderr.String())
	}

	const token = "0123456789abcdef0123"
	t.Setenv("PRISM_OWNER_TOKEN", token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "0.0.0.0:0", "--share-addr", "127.0.0.1:0", "--db", t.TempDir() + "/prism.db"}, io.Discard, pw)
		pw.Close()
	}()
	urlRE := regexp.MustCompile(`msg="?([a-z ]+)"? url=(http://\S+)`)
	sc := bufio.NewScanner(pr)
	var main, shares string
	for (main == "" || shares == "") && sc.Scan() {
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			if m[1] == "serving share links" {
				shares = m[2]
			} else {
				main = strings.NewReplacer("0.0.0.0", "127.0.0.1", "[::]", "127.0.0.1").Replace(m[2])
			}
		}
	}
	go io.Copy(io.Discard, pr)
	if main == "" || shares == "" {
		t.Fatalf("urls not logged: %q %q", main, shares)
	}
	get := func(u, bearer string) int {
		req, _ := http.NewRequest("GET", u, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := get(main+"/api/sessions", ""); s != 401 {
		t.Errorf("no token: %d", s)
	}
	if s := get(main+"/api/sessions", token); s != 200 {
		t.Errorf("bearer token: %d", s)
	}
	if s := get(main+"/healthz", ""); s != 200 {
		t.Errorf("healthz: %d", s)
	}
	if s := get(shares+"/api/sessions", token); s != 404 {
		t.Errorf("share listener answered the API: %d", s)
	}
	if s := get(shares+"/static/app.css", ""); s != 200 {
		t.Errorf("share listener static: %d", s)
	}
	// A link made on the main listener points at the share listener.
	var sessions []struct{ ID string }
	req, _ := http.NewRequest("GET", main+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(res.Body).Decode(&sessions)
	res.Body.Close()
	if len(sessions) != 1 {
		t.Fatalf("sessions: %+v", sessions)
	}
	req, _ = http.NewRequest("POST", main+"/api/sessions/"+sessions[0].ID+"/shares", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var link struct{ URL string }
	json.NewDecoder(res.Body).Decode(&link)
	res.Body.Close()
	if !strings.HasPrefix(link.URL, shares+"/s/") {
		t.Errorf("link %q does not point at the share listener %s", link.URL, shares)
	}
	if s := get(link.URL, ""); s != 200 {
		t.Errorf("the link on the share listener: %d", s)
	}
	// Signing in gives a cookie; signing out revokes it in the store.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noRedirect.PostForm(main+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("sign-in: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	cookie := res.Cookies()[0]
	withCookie := func(method, path string) int {
		req, _ := http.NewRequest(method, main+path, nil)
		req.AddCookie(cookie)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := withCookie("GET", "/api/sessions"); s != 200 {
		t.Errorf("with the login cookie: %d", s)
	}
	if s := withCookie("POST", "/logout"); s != http.StatusSeeOther {
		t.Errorf("sign-out: %d", s)
	}
	if s := withCookie("GET", "/api/sessions"); s != 401 {
		t.Errorf("the signed-out cookie presented again: %d, want 401", s)
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

// TestPricesInlineOrFile: --prices takes the table as inline JSON (as the
// help and README show it) or as a file's path; a bad table or a missing
// file is a usage error that says which.
func TestPricesInlineOrFile(t *testing.T) {
	const table = `{"deepseek-chat": {"input": 0.27, "output": 1.10}}`
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{table, "  " + table, path} {
		tab, err := loadPrices(v)
		if err != nil || tab["deepseek-chat"].Input != 0.27 {
			t.Errorf("--prices %q: %v, %v", v, tab, err)
		}
	}
	for v, want := range map[string]string{
		`{"deepseek-chat": {"input": "x"}}`:     "inline price table",
		filepath.Join(t.TempDir(), "none.json"): "no such file",
	} {
		if _, err := loadPrices(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--prices %q: %v, want an error saying %q", v, err, want)
		}
	}
	// The server starts with an inline table.
	cfg, err := parseServeFlags([]string{"--prices", table}, io.Discard)
	if err != nil || cfg.Prices != table {
		t.Fatalf("%+v %v", cfg.Prices, err)
	}
}

// TestHelp: prism --help, -h and help list every command with its line
// (exit status 0, on stdout); prism help COMMAND and prism COMMAND --help
// print that command's flags.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errOut strings.Builder
		if code := run(t.Context(), args, &out, &errOut); code != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
		for _, c := range commands() {
			if !strings.Contains(out.String(), "  "+c.name+" ") || !strings.Contains(out.String(), c.summary) {
				t.Errorf("%v does not list %s: %s", args, c.name, out.String())
			}
		}
	}
	for _, c := range commands() {
		var out strings.Builder
		if code := run(t.Context(), []string{"help", c.name}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "\n  -") {
			t.Errorf("help %s: exit %d: %q", c.name, code, out.String())
		}
	}
	var out strings.Builder
	if code := run(t.Context(), []string{"serve", "--help"}, io.Discard, &out); code != 0 || !strings.Contains(out.String(), "-prices") {
		t.Errorf("serve --help: exit %d: %q", code, out.String())
	}
	if code := run(t.Context(), []string{"help", "nope"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("help nope: exit %d", code)
	}
}

// TestParseServeShareCaps: the share listener's stream caps default to
// 1,000 per link and 5,000 in all, and are set by flag or environment.
func TestParseServeShareCaps(t *testing.T) {
	t.Setenv("PRISM_SHARE_MAX_STREAMS", "")
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil || cfg.ShareStreamsPerLink != 1000 || cfg.ShareStreams != 5000 {
		t.Errorf("defaults: per link %d, in all %d, %v", cfg.ShareStreamsPerLink, cfg.ShareStreams, err)
	}
	t.Setenv("PRISM_SHARE_MAX_STREAMS", "70")
	cfg, err = parseServeFlags([]string{"--share-max-streams-per-link", "-1"}, io.Discard)
	if err != nil || cfg.ShareStreamsPerLink != -1 || cfg.ShareStreams != 70 {
		t.Errorf("set: per link %d, in all %d, %v", cfg.ShareStreamsPerLink, cfg.ShareStreams, err)
	}
}

func TestParseRetain(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"", 0, ""},
		{"0", 0, ""},
		{"30d", 30 * 24 * time.Hour, ""},
		{"72h", 72 * time.Hour, ""},
		{"1h", time.Hour, ""},
		{"59m", 0, "at least 1h"},
		{"0d", 0, "positive number of days"},
		{"-3d", 0, "positive number of days"},
		{"thirty days", 0, "positive number of days"},
	}
	for _, tt := range tests {
		got, err := parseRetain(tt.in)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseRetain(%q) = %v, %v; want %v, error containing %q", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParseLabels: --labels is a comma-separated set of valid labels,
// trimmed and without repeats; a bad one is refused naming it.
func TestParseLabels(t *testing.T) {
	got, err := parseLabels(" wrong, needs review ,wrong")
	if err != nil || strings.Join(got, "|") != "wrong|needs review" {
		t.Errorf("parseLabels = %q, %v", got, err)
	}
	if got, err := parseLabels(""); err != nil || got != nil {
		t.Errorf("parseLabels(\"\") = %q, %v; want the default set (nil)", got, err)
	}
	for _, bad := range []string{"ok,,slow", "a\u0007b", strings.Repeat("x", 65)} {
		if _, err := parseLabels(bad); err == nil {
			t.Errorf("parseLabels(%q) accepted it", bad)
		}
	}
}
