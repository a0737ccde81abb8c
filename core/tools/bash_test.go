package tools_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"prism/core"
	"prism/core/tools"
)

func bashEnv(t *testing.T) *env {
	return newEnv(t, tools.Options{AllowBash: true, BashKillGrace: 500 * time.Millisecond})
}

func TestBashRegisteredOnlyWhenAllowed(t *testing.T) {
	names := func(opts tools.Options) []string {
		list, err := tools.Builtins(opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range list {
			out = append(out, tool.Name())
		}
		return out
	}
	ws := t.TempDir()
	if got := strings.Join(names(tools.Options{Workspace: ws}), " "); got != "read write edit grep glob note" {
		t.Errorf("default tools: %s", got)
	}
	if got := strings.Join(names(tools.Options{Workspace: ws, AllowBash: true}), " "); got != "read write edit grep glob bash note" {
		t.Errorf("with AllowBash: %s", got)
	}
	e := newEnv(t, tools.Options{})
	o := e.call("bash", map[string]any{"command": "echo hi", "description": "Say hi"})
	o.fails(t, `unknown tool "bash"`, &core.ErrorInfo{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL"})
}

func TestBashExitZero(t *testing.T) {
	e := bashEnv(t)
	o := e.call("bash", map[string]any{"command": "echo hello", "description": "Say hello"})
	if got := o.ok(t); got != "hello\n" {
		t.Errorf("text %q", got)
	}
	var v tools.BashValue
	o.value(t, &v)
	jsonEq(t, "value", v, `{"kind":"foreground","exitCode":0,"signal":null,"timedOut":false,"aborted":false,
		"timeoutMs":120000,"stdout":{"text":"hello\n","truncated":false},"stderr":{"text":"","truncated":false}}`)
	if o.proj.Meta != nil {
		t.Errorf("bash has no meta, got %s", o.proj.Meta)
	}
	jsonEq(t, "call view", o.call, `{"card":"terminal","title":"echo hello","description":"Say hello"}`)
	jsonEq(t, "result view", o.view, `{"card":"terminal","output":"hello\n","exitCode":0}`)
	if got := e.call("bash", map[string]any{"command": "true", "description": "Nothing"}).ok(t); got != "(no output)" {
		t.Errorf("silent command: %q", got)
	}
}

func TestBashNonZeroExitIsNotAnError(t *testing.T) {
	e := bashEnv(t)
	o := e.call("bash", map[string]any{"command": "echo out; echo err >&2; exit 3", "description": "Fail on purpose"})
	if got, want := o.ok(t), "out\n[stderr]\nerr\n[exit code: 3]"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	jsonEq(t, "result view", o.view, `{"card":"terminal","output":"out\n[stderr]\nerr","exitCode":3}`)
}

func TestBashKilledBySignal(t *testing.T) {
	e := bashEnv(t)
	o := e.call("bash", map[string]any{"command": "kill -KILL $$", "description": "Kill the shell"})
	if got := o.ok(t); got != "(no output)\n[killed by signal: SIGKILL]" {
		t.Errorf("text %q", got)
	}
	jsonEq(t, "result view", o.view, `{"card":"terminal","output":"(no output)","signal":"SIGKILL"}`)
}

// firstLinePID parses the pid a command echoed first.
func firstLinePID(t *testing.T, text string) int {
	t.Helper()
	line, _, _ := strings.Cut(text, "\n")
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("no pid in %q", text)
	}
	return pid
}

// awaitGone waits (on a pidfd, not a clock) until pid has exited.
func awaitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return // already reaped
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 5000)
	if err != nil || n != 1 {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		t.Fatalf("process %d survived the tool call (poll %d, %v): %s", pid, n, err, stat)
	}
}

func TestBashTimeoutKillsTheProcessGroup(t *testing.T) {
	e := bashEnv(t)
	start := time.Now()
	o := e.call("bash", map[string]any{"command": "sleep 60 & echo $!; wait", "description": "Wait forever", "timeoutMs": 300})
	text := o.ok(t)
	pid := firstLinePID(t, text)
	if want := strconv.Itoa(pid) + "\n[timed out after 300ms]\n[killed by signal: SIGTERM]"; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the call took %v", took)
	}
	awaitGone(t, pid)
	jsonEq(t, "result view", o.view, `{"card":"terminal","output":`+jsonString(strconv.Itoa(pid)+"\n[timed out after 300ms]")+`,"signal":"SIGTERM"}`)
	var v tools.BashValue
	o.value(t, &v)
	if !v.TimedOut || v.TimeoutMs != 300 {
		t.Errorf("value timedOut=%v timeoutMs=%v", v.TimedOut, v.TimeoutMs)
	}
}

func TestBashTimeoutEscalatesToSIGKILL(t *testing.T) {
	e := bashEnv(t)
	// Both the shell and its child ignore SIGTERM; the grace period ends
	// with SIGKILL to the whole group.
	o := e.call("bash", map[string]any{"command": "trap '' TERM; sleep 60 & echo $!; wait", "description": "Ignore TERM", "timeoutMs": 200})
	text := o.ok(t)
	pid := firstLinePID(t, text)
	if !strings.HasSuffix(text, "\n[timed out after 200ms]\n[killed by signal: SIGKILL]") {
		t.Errorf("text %q", text)
	}
	awaitGone(t, pid)
}

func TestBashCancellation(t *testing.T) {
	e := bashEnv(t)
	fifo := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		done <- e.callCtx(ctx, "bash", map[string]any{
			"command": "echo $$ > " + fifo + "; exec sleep 60", "description": "Sleep until cancelled"})
	}()
	f, err := os.Open(fifo) // returns once the command opened the fifo to write
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	if err != nil {
		t.Fatalf("reading the pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	o := <-done
	o.fails(t, "tool call aborted", &core.ErrorInfo{Name: "AbortError", Code: "ABORTED"})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("cancellation took %v", took)
	}
	awaitGone(t, pid)
	jsonEq(t, "result view", o.view, "{\"card\":\"generic\",\"content\":[{\"type\":\"text\",\"text\":\"```console\\nError: tool call aborted\\n```\"}]}")
}

func TestBashOutputTruncation(t *testing.T) {
	e := bashEnv(t)
	o := e.call("bash", map[string]any{"command": "head -c 100000 /dev/zero | tr '\\0' a; echo done >&2", "description": "Print a lot"})
	want := strings.Repeat("a", tools.BashMaxOutputBytes) + "\n[output truncated; full output: (unavailable)]\n[stderr]\ndone\n"
	if got := o.ok(t); got != want {
		t.Errorf("text has %d bytes, want %d; tail %q", len(got), len(want), got[max(0, len(got)-80):])
	}
	var v tools.BashValue
	o.value(t, &v)
	if !v.Stdout.Truncated || v.Stderr.Truncated || len(v.Stdout.Text) != tools.BashMaxOutputBytes {
		t.Errorf("stdout truncated=%v (%d bytes), stderr truncated=%v", v.Stdout.Truncated, len(v.Stdout.Text), v.Stderr.Truncated)
	}
}

func TestBashWorkdirAndEnvironment(t *testing.T) {
	e := bashEnv(t)
	if err := os.Mkdir(e.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(e.path("sub"))
	if err != nil {
		t.Fatal(err)
	}
	o := e.call("bash", map[string]any{"command": "pwd", "description": "Show the directory", "workdir": "sub"})
	if got := o.ok(t); got != real+"\n" {
		t.Errorf("pwd %q, want %q", got, real)
	}
	jsonEq(t, "call view", o.call, `{"card":"terminal","title":"pwd","description":"Show the directory","cwd":"sub"}`)
	if got := e.call("bash", map[string]any{"command": "pwd", "description": "Show the directory"}).ok(t); !strings.HasSuffix(got, filepath.Base(e.ws)+"\n") {
		t.Errorf("default workdir %q, want the workspace", got)
	}
	e.write("file.txt", "x")
	e.call("bash", map[string]any{"command": "pwd", "description": "d", "workdir": "file.txt"}).
		fails(t, `cannot run in "file.txt": not a directory`, fsErr("FS_NOT_DIRECTORY"))
	e.call("bash", map[string]any{"command": "pwd", "description": "d", "workdir": "nope"}).
		fails(t, `cannot run in "nope": not found`, fsErr("FS_NOT_FOUND"))

	t.Setenv("PRISM_TEST_API_KEY", "leaked")
	t.Setenv("PRISM_TEST_SECRET", "leaked")
	t.Setenv("DSH_SESSION_ID", "stale")
	t.Setenv("PRISM_TEST_PLAIN", "kept")
	o = e.call("bash", map[string]any{"command": `echo "${PRISM_TEST_API_KEY:-unset} ${PRISM_TEST_SECRET:-unset} ${DSH_SESSION_ID:-unset} $PRISM_TEST_PLAIN $TERM $NO_COLOR $PAGER"`,
		"description": "Show the environment"})
	if got := o.ok(t); got != "unset unset unset kept dumb 1 cat\n" {
		t.Errorf("environment: %q", got)
	}
}

func TestBashArgumentFailures(t *testing.T) {
	e := bashEnv(t)
	for _, c := range []struct {
		args    map[string]any
		message string
	}{
		{map[string]any{"command": " ", "description": "d"}, "invalid command: expected a non-empty string"},
		{map[string]any{"command": "ls", "description": ""}, "invalid description: expected a non-empty string"},
		{map[string]any{"command": "ls", "description": "d", "timeoutMs": -5}, "invalid timeoutMs: expected a positive number, got -5"},
		{map[string]any{"command": "ls", "description": "d", "run_in_background": true}, "background execution is disabled for this bash tool"},
	} {
		e.call("bash", c.args).fails(t, c.message, nil)
	}
	// A huge timeoutMs is capped at 600 s, not overflowed.
	var v tools.BashValue
	e.call("bash", map[string]any{"command": "echo ok", "description": "d", "timeoutMs": 1e300}).value(t, &v)
	if v.TimedOut || v.TimeoutMs != 600000 || v.Stdout.Text != "ok\n" {
		t.Errorf("capped timeout: timedOut=%v timeoutMs=%v stdout=%q", v.TimedOut, v.TimeoutMs, v.Stdout.Text)
	}
	e.call("bash", map[string]any{"command": "ls"}).fails(t, `invalid arguments: missing required property "description"`,
		&core.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"})
}

func TestBashPresentersOnLoggedResults(t *testing.T) {
	e := bashEnv(t)
	args := `{"command":"pnpm run check","description":"Run checks","workdir":"/tmp/fixture/deep"}`
	present := func(args, text string, isError bool) core.ResultView {
		return e.reg.PresentResult("bash", args, core.ToolResult{Content: core.Text(text), IsError: isError})
	}
	jsonEq(t, "call", e.reg.PresentCall("bash", args),
		`{"card":"terminal","title":"pnpm run check","description":"Run checks","cwd":"/tmp/fixture/deep"}`)
	jsonEq(t, "exit 1", present(args, "lint ok\ntests failed\n[exit code: 1]", false),
		`{"card":"terminal","output":"lint ok\ntests failed","exitCode":1}`)
	jsonEq(t, "clean", present(args, "all good\n", false), `{"card":"terminal","output":"all good\n","exitCode":0}`)
	jsonEq(t, "timeout and signal", present(args, "x\n[timed out after 5ms]\n[killed by signal: SIGTERM]", false),
		`{"card":"terminal","output":"x\n[timed out after 5ms]","signal":"SIGTERM"}`)
	// A marker that is not the last line stays in the output.
	jsonEq(t, "marker mid-text", present(args, "[exit code: 2]\nmore", false),
		`{"card":"terminal","output":"[exit code: 2]\nmore","exitCode":0}`)
	jsonEq(t, "error", present(args, "Error: tool call aborted\n\n", true),
		"{\"card\":\"generic\",\"content\":[{\"type\":\"text\",\"text\":\"```console\\nError: tool call aborted\\n```\"}]}")

	background := `{"command":"npm run dev","description":"Start the dev server","run_in_background":true}`
	jsonEq(t, "background call", e.reg.PresentCall("bash", background),
		`{"card":"generic","title":"npm run dev","kind":"execute","rawInput":"npm run dev","content":[{"type":"text","text":"Start the dev server"}]}`)
	jsonEq(t, "background result", present(background, "started background job j-1", false),
		"{\"card\":\"generic\",\"content\":[{\"type\":\"text\",\"text\":\"```console\\nstarted background job j-1\\n```\"}]}")

	twoBlocks := core.ToolResult{Content: core.Content{&core.TextBlock{Text: "a"}, &core.TextBlock{Text: "b"}}}
	if _, ok := e.reg.PresentResult("bash", args, twoBlocks).(*core.GenericResultView); !ok {
		t.Error("two blocks: want the generic fallback")
	}
	// Obsolete arguments (no description) present generically.
	if _, ok := e.reg.PresentCall("bash", `{"command":"ls"}`).(*core.GenericCallView); !ok {
		t.Error("invalid args: want the generic call card")
	}
}
