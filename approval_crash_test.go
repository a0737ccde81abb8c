package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/sources/dsh"
)

// serveChildEnv makes this test binary run `prism` with the arguments it
// holds (one per line) instead of the tests: a server process a test can
// SIGKILL.
const serveChildEnv = "PRISM_TEST_CHILD_ARGS"

// runChildIfAsked runs prism as the child process when the environment asks
// for it, and exits with its status; TestMain calls it first.
func runChildIfAsked() {
	args := os.Getenv(serveChildEnv)
	if args == "" {
		return
	}
	os.Exit(run(context.Background(), strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// child is a prism process run from this test binary.
type child struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	log    strings.Builder
	lines  chan string // its log lines, as they come
	exited chan error
}

// startChild runs prism with args, its environment clean but for env, and
// waits for the URL it serves.
func startChild(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(),
		serveChildEnv + "=" + strings.Join(args, "\n")}, env...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 4096), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.log.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		c.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
	})
	urlRE := regexp.MustCompile(`msg=serving url=(http://\S+)`)
	line := c.waitLog(t, urlRE.String(), 60*time.Second)
	c.url = urlRE.FindStringSubmatch(line)[1]
	return c
}

// waitLog returns the first log line matching pattern.
func (c *child) waitLog(t *testing.T, pattern string, within time.Duration) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.After(within)
	for {
		select {
		case l := <-c.lines:
			if re.MatchString(l) {
				return l
			}
		case err := <-c.exited:
			c.exited <- err
			t.Fatalf("prism exited (%v) before logging %q:\n%s", err, pattern, c.logText())
		case <-deadline:
			t.Fatalf("prism never logged %q within %v:\n%s", pattern, within, c.logText())
		}
	}
}

func (c *child) logText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}

func (c *child) get(t *testing.T, path string) string {
	t.Helper()
	return getOK(t, c.url+path)
}

// getOK reads a URL, failing t on any status but 200.
func getOK(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

// TestApprovalSIGKILLWhileWaiting: prism serve with an ask rule runs the
// demo until its write waits for approval — the card offers its buttons —
// and is killed with SIGKILL. Restarted on the same database it repairs the
// open turn as dsh's crash repair does, knowing the call never started: the
// approval is decided cancelled, the call answered TOOL_NOT_STARTED citing
// its tool/call, the turn interrupted. Nothing waits any more and no button
// is left on the page.
func TestApprovalSIGKILLWhileWaiting(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	first := startChild(t, nil, "serve", "--addr", "127.0.0.1:0", "--db", dbPath, "--ask-rule", "write:file_path!~^src/")
	asked := first.waitLog(t, `msg="approval asked".* tool=write`, 2*time.Minute)
	id := regexp.MustCompile(`session_id=(\S+)`).FindStringSubmatch(asked)[1]

	var pending []struct{ ID, SessionID, ToolName, Reason string }
	if err := json.Unmarshal([]byte(first.get(t, "/api/approvals")), &pending); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].SessionID != id || pending[0].ToolName != "write" || pending[0].Reason != `file_path does not match "^src/"` {
		t.Fatalf("pending before the kill = %+v", pending)
	}
	page := pageDoc(t, first.get(t, "/sessions/"+id))
	if page.Find(`[data-state="awaiting"] [data-testid="approve"]`).Length() != 1 {
		t.Fatal("the waiting card offers no Approve button before the kill")
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-first.exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("prism exited with %v, want killed", err)
	}
	first.exited <- nil

	second := startChild(t, nil, "serve", "--addr", "127.0.0.1:0", "--db", dbPath, "--no-demo", "--ask-rule", "write:file_path!~^src/")
	if strings.TrimSpace(second.get(t, "/api/approvals")) != "[]" {
		t.Error("an approval still waits after the restart")
	}
	logs, _, err := dsh.Decode(strings.NewReader(second.get(t, "/api/sessions/"+id+"/events")), -1, dsh.DefaultLimits())
	if err != nil || len(logs) != 1 {
		t.Fatalf("export: %v", err)
	}
	events := logs[0].Events
	var callSeq int64 = -1
	var askedID string
	for _, e := range events {
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			_ = json.Unmarshal(e.Data, &d)
			if d.Name == "write" {
				callSeq = e.Seq
			}
		case core.EventApprovalAsked:
			var d core.ApprovalAsked
			_ = json.Unmarshal(e.Data, &d)
			askedID = d.ID
		}
	}
	tail := events[len(events)-4:]
	var types []string
	for _, e := range tail {
		types = append(types, e.Type)
	}
	if strings.Join(types, " ") != "approval/decided tool/result step/end turn/end" {
		t.Fatalf("the log ends %v, want the repair's closers", types)
	}
	var decided core.ApprovalDecided
	var result core.ToolResultData
	var end core.TurnEnd
	_ = json.Unmarshal(tail[0].Data, &decided)
	_ = json.Unmarshal(tail[1].Data, &result)
	_ = json.Unmarshal(tail[3].Data, &end)
	if decided != (core.ApprovalDecided{ID: askedID, Outcome: core.ApprovalCancelled, Reason: core.ApprovalInterruptedReason}) {
		t.Errorf("repair's decision = %+v", decided)
	}
	if result.Error == nil || result.Error.Code != core.CodeToolNotStarted || result.Projection().Content.PlainText() != core.ToolNotStartedText ||
		len(tail[1].SourceEventSeqs) != 1 || tail[1].SourceEventSeqs[0] != callSeq {
		t.Errorf("repair's result = %+v citing %v (call at %d)", result, tail[1].SourceEventSeqs, callSeq)
	}
	if end.Reason.Kind != core.TurnInterrupted {
		t.Errorf("turn ended %+v", end.Reason)
	}

	page = pageDoc(t, second.get(t, "/sessions/"+id))
	if n := page.Find(`form[data-testid="approval-form"], [data-testid="approve"], [data-testid="reject"]`).Length(); n != 0 {
		t.Errorf("%d decision controls left on the page", n)
	}
	card := page.Find(`[data-testid="tool-card"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return s.Find(`[data-testid="approval"]`).Length() == 1
	})
	if st, _ := card.Attr("data-state"); card.Length() != 1 || st != "error" {
		t.Fatalf("the write card: %d found, state %q", card.Length(), st)
	}
	if o, _ := card.Attr("data-outcome"); o != "not-started" {
		t.Errorf("the write card's outcome = %q, want not-started", o)
	}
	if s, _ := card.Find(`[data-testid="approval"]`).Attr("data-approval-state"); s != "cancelled" {
		t.Errorf("its approval = %q, want cancelled", s)
	}
	list := pageDoc(t, second.get(t, "/"))
	row := list.Find(`[data-session-id="` + id + `"]`)
	if st, _ := row.Attr("data-status"); st != core.StatusInterrupted || row.Find(`[data-testid="awaiting-badge"]`).Length() != 0 {
		t.Errorf("list row: status %q, awaiting badge %d", st, row.Find(`[data-testid="awaiting-badge"]`).Length())
	}
}

func pageDoc(t *testing.T, html string) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
