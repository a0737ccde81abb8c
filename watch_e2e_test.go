package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	"prism/views"
)

// claudeLines writes a Claude Code transcript from the format's definition:
// a prompt, then per call an assistant tool_use line (stop_reason
// tool_use, so its response is complete) and the user line with its
// tool_result.
type claudeLines struct{ sid string }

func (c claudeLines) env(typ, uuid string, n int) string {
	return fmt.Sprintf(`{"type":%q,"isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":%q,"version":"2.1.3","gitBranch":"main","uuid":%q,"timestamp":"2026-05-01T10:%02d:%02d.000Z"`,
		typ, c.sid, uuid, n/60%60, n%60)
}

func (c claudeLines) prompt(text string) string {
	return c.env("user", "u0", 0) + `,"parentUuid":null,"message":{"role":"user","content":` + fmt.Sprintf("%q", text) + "}}\n"
}

func (c claudeLines) call(n int) string {
	return c.env("assistant", fmt.Sprintf("a%d", n), n) + fmt.Sprintf(`,"requestId":"req_%d","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"echo %d"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":5}}}`, n, n, n, n) + "\n"
}

func (c claudeLines) result(n int) string {
	return c.env("user", fmt.Sprintf("r%d", n), n) + fmt.Sprintf(`,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%d"}]},"toolUseResult":{"stdout":"%d","stderr":"","interrupted":false,"isImage":false}}`, n, n, n) + "\n"
}

// watchStream reads a page's SSE stream line by line.
type watchStream struct {
	res *http.Response
	sc  *bufio.Scanner
}

func openStream(t testing.TB, ctx context.Context, url string) *watchStream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &watchStream{res: res, sc: sc}
}

// until reads until a line matches re; it fails when the stream ends (the
// context's deadline ends it).
func (s *watchStream) until(t testing.TB, re *regexp.Regexp) {
	t.Helper()
	for s.sc.Scan() {
		if re.Match(s.sc.Bytes()) {
			return
		}
	}
	t.Fatalf("the stream ended before %s: %v", re, s.sc.Err())
}

func cardRE(call, state string) *regexp.Regexp {
	return regexp.MustCompile(`data-call-id="` + call + `"[^>]*data-state="` + state + `"`)
}

// watchServer starts prism serve watching a Claude Code projects folder
// whose one transcript holds its prompt, and returns the server, the
// transcript (open for appending), and the session page's stream, opened
// once the list's stream showed the new session.
func watchServer(t testing.TB, ctx context.Context, c claudeLines) (*os.File, *watchStream) {
	t.Helper()
	dir := filepath.Join(tempDir(t), "projects")
	srv := startServer(t, 0, filepath.Join(tempDir(t), "p.db"), "--watch", dir)
	list := openStream(t, ctx, srv.url+views.ListStreamURL(""))
	defer list.res.Body.Close()
	path := filepath.Join(dir, "-home-dev-app", c.sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString(c.prompt("Run the numbers")); err != nil {
		t.Fatal(err)
	}
	// A new session file appears on an open list, live.
	list.until(t, regexp.MustCompile(`data-session-id="`+c.sid+`"`))
	return f, openStream(t, ctx, srv.url+views.SessionStreamURL(c.sid, -1))
}

func tempDir(t testing.TB) string { return t.TempDir() }

// TestWatchClaudeCodeLive runs the real binary with --watch on a Claude
// Code projects folder: a new transcript shows on the open list, each
// tool_use line written shows as a pending card on the open session page,
// and the card completes when its result line lands.
func TestWatchClaudeCodeLive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := claudeLines{sid: "5a1d0000-0000-4000-8000-0000000e2e01"}
	f, page := watchServer(t, ctx, c)
	defer page.res.Body.Close()
	for n := 1; n <= 3; n++ {
		call := fmt.Sprintf("toolu_%d", n)
		if _, err := f.WriteString(c.call(n)); err != nil {
			t.Fatal(err)
		}
		page.until(t, cardRE(call, views.StatePending))
		if _, err := f.WriteString(c.result(n)); err != nil {
			t.Fatal(err)
		}
		page.until(t, cardRE(call, views.StateOK))
	}
}

// BenchmarkWatchLineToPendingCard measures, through a real server's stream,
// the time from a Claude Code tool_use line written to its pending card on
// the open session page, over 200 lines (100 calls and their results):
// p50 and p99 of the call lines (ms).
func BenchmarkWatchLineToPendingCard(b *testing.B) {
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		c := claudeLines{sid: fmt.Sprintf("5a1d0000-0000-4000-8000-%012d", time.Now().UnixNano()%1e12)}
		f, page := watchServer(b, ctx, c)
		var lat []time.Duration
		for n := 1; n <= 100; n++ {
			call := fmt.Sprintf("toolu_%d", n)
			start := time.Now()
			f.WriteString(c.call(n))
			page.until(b, cardRE(call, views.StatePending))
			lat = append(lat, time.Since(start))
			f.WriteString(c.result(n))
			page.until(b, cardRE(call, views.StateOK))
		}
		page.res.Body.Close()
		cancel()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
