package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"prism/core"
)

// Bash bounds (dsh's bash-local defaults).
const (
	// BashDefaultTimeout is a command's timeout when the call names none.
	BashDefaultTimeout = 120 * time.Second
	// BashMaxTimeout caps a call's timeoutMs.
	BashMaxTimeout = 600 * time.Second
	// BashMaxOutputBytes is how much of each stream's tail a result keeps.
	BashMaxOutputBytes = 64_000
	// BashDefaultKillGrace is how long a terminated command's process group
	// gets between SIGTERM and SIGKILL, and how long output pipes held by
	// leftover processes are drained after the shell exits.
	BashDefaultKillGrace = 3 * time.Second
)

// BashArgs are the bash tool's arguments. RunInBackground is not in prism's
// schema (there is no job runtime); it is decoded so a dsh log that used it
// presents as dsh does, and a call that sets it is refused.
type BashArgs struct {
	Command         string   `json:"command"`
	Description     string   `json:"description"`
	TimeoutMs       *float64 `json:"timeoutMs,omitempty"`
	Workdir         *string  `json:"workdir,omitempty"`
	RunInBackground *bool    `json:"run_in_background,omitempty"`
}

// BashOutput is one stream's retained tail.
type BashOutput struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
}

// BashValue is the bash tool's canonical value (dsh's ShellForegroundResult):
// how the command ended and the tail of each stream. ExitCode and Signal
// are mutually exclusive; a non-zero exit is a result, not a failure.
type BashValue struct {
	Kind      string     `json:"kind"` // "foreground"
	ExitCode  *int       `json:"exitCode"`
	Signal    *string    `json:"signal"`
	TimedOut  bool       `json:"timedOut"`
	Aborted   bool       `json:"aborted"`
	TimeoutMs float64    `json:"timeoutMs"`
	Stdout    BashOutput `json:"stdout"`
	Stderr    BashOutput `json:"stderr"`
}

const bashParams = `{
	"command": {"type": "string", "required": true, "description": "The bash command to execute."},
	"description": {"type": "string", "required": true, "description": "Clear, concise description of what this command does in active voice, 5-10 words (shown in the UI). Examples: \"ls\" → \"List files in current directory\"; \"git status\" → \"Show working tree status\"; \"npm install\" → \"Install package dependencies\"."},
	"timeoutMs": {"type": "number", "description": "Timeout in milliseconds. The executor applies its configured default and cap, and kills the command on expiry."},
	"workdir": {"type": "string", "description": "Working directory for this command. Defaults to the session workspace; a relative path is resolved against it."}
}`

const bashOutputSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"text": {"type": "string", "required": true},
	"truncated": {"type": "boolean", "required": true}}}`

const bashSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"kind": {"type": "string", "required": true, "const": "foreground"},
	"exitCode": {"required": true, "oneOf": [{"type": "integer"}, {"type": "null"}]},
	"signal": {"required": true, "oneOf": [{"type": "string"}, {"type": "null"}]},
	"timedOut": {"type": "boolean", "required": true},
	"aborted": {"type": "boolean", "required": true},
	"timeoutMs": {"type": "number", "required": true},
	"stdout": ` + bashOutputSchema + `,
	"stderr": ` + bashOutputSchema + `}}`

// bashDescription is dsh's bash description without the parts prism does
// not have: managed $DSH_* variables, a file sandbox, spill files and
// background jobs.
const bashDescription = "Execute a bash command (`bash -c`) and return its stdout/stderr. Each call runs in a fresh shell: " +
	"no state (cwd, variables, functions) persists between calls — pass `workdir` instead of using `cd`. " +
	"Non-zero exits are reported as `[exit code: N]`. Long output is truncated to its tail."

// bashDefinition returns the bash tool: one foreground `bash -c` in its own
// process group inside the workspace, a terminal card with the exit parsed.
func bashDefinition(ws workspaceSource, grace time.Duration) core.Definition[BashArgs, BashValue] {
	return core.Definition[BashArgs, BashValue]{
		Name:        "bash",
		Description: bashDescription,
		Parameters:  bashParams,
		Output: core.Output[BashArgs, BashValue]{
			Schema: bashSchema,
			Render: func(_ BashArgs, v BashValue) (core.Content, error) {
				return core.Text(renderShellResult(v)), nil
			},
		},
		Execute: func(ctx context.Context, a BashArgs, run *core.Run) (BashValue, error) {
			if err := validateBashArgs(a); err != nil {
				return BashValue{}, err
			}
			w, err := ws(run)
			if err != nil {
				return BashValue{}, err
			}
			dir := w.real
			if a.Workdir != nil {
				t, err := w.resolve("run in", *a.Workdir)
				if err != nil {
					return BashValue{}, err
				}
				fi, err := os.Stat(filepath.Join(w.real, t.rel))
				switch {
				case errors.Is(err, fs.ErrNotExist):
					return BashValue{}, fsError(CodeFsNotFound, "cannot run in %q: not found", *a.Workdir)
				case err != nil:
					return BashValue{}, fsError(CodeFsIOError, "cannot run in %q: %v", *a.Workdir, err)
				case !fi.IsDir():
					return BashValue{}, fsError(CodeFsNotDirectory, "cannot run in %q: not a directory", *a.Workdir)
				}
				dir = filepath.Join(w.real, t.rel)
			}
			timeout := BashDefaultTimeout
			if a.TimeoutMs != nil {
				// Clamp before converting: a huge timeoutMs must not overflow.
				ms := min(*a.TimeoutMs, float64(BashMaxTimeout/time.Millisecond))
				timeout = time.Duration(ms * float64(time.Millisecond))
			}
			return runShell(ctx, dir, a.Command, timeout, grace)
		},
		PresentCall:   presentBashCall,
		PresentResult: presentBashResult,
	}
}

// validateBashArgs is dsh's validateBashArgs, plus the refusal of a
// background run (dsh's enableRunInBackground: false).
func validateBashArgs(a BashArgs) error {
	switch {
	case strings.TrimSpace(a.Command) == "":
		return errors.New("invalid command: expected a non-empty string")
	case strings.TrimSpace(a.Description) == "":
		return errors.New("invalid description: expected a non-empty string")
	case a.TimeoutMs != nil && (math.IsNaN(*a.TimeoutMs) || math.IsInf(*a.TimeoutMs, 0) || *a.TimeoutMs <= 0):
		return fmt.Errorf("invalid timeoutMs: expected a positive number, got %s", jsNumber(*a.TimeoutMs))
	case a.RunInBackground != nil && *a.RunInBackground:
		return errors.New("background execution is disabled for this bash tool")
	}
	return nil
}

// shellPath is bash when the machine has it, else /bin/sh.
func shellPath() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// sensitiveEnv matches credential-shaped variable names (dsh's
// SENSITIVE_ENV_PATTERN).
var sensitiveEnv = regexp.MustCompile(`(?i)KEY|SECRET|TOKEN`)

// bashEnv is the command's environment, as dsh builds it: the server's
// environment minus credential-shaped names (…KEY…, …SECRET…, …TOKEN…,
// case-insensitive) and DSH_* names, plus overrides that keep output plain
// (no colors, no pagers, a dumb terminal). PATH, HOME, locale and proxy
// settings are kept so ordinary tools work.
func bashEnv() []string {
	overrides := []string{"NO_COLOR=1", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat"}
	skip := map[string]bool{"NO_COLOR": true, "TERM": true, "PAGER": true, "GIT_PAGER": true}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if skip[name] || sensitiveEnv.MatchString(name) || strings.HasPrefix(name, "DSH_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, overrides...)
}

// guardianScript leads a command's process group: it waits for EOF on its
// stdin — a pipe whose write end only the server holds — and then kills
// the whole group, itself included. The server closes that end when the
// call is over; the kernel closes it when the server dies, SIGKILL
// included. Termination signals for the group leave it running, so the
// group is still reaped should they not end everything.
const guardianScript = `trap '' TERM INT HUP; read -r line; kill -KILL 0`

// startGuardian starts the process group a command will join and returns
// its id and the lifeline: closing it (or the server's death) kills every
// process left in the group — the shell's children and grandchildren too.
func startGuardian() (pgid int, lifeline *os.File, wait func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("bash: lifeline pipe: %w", err)
	}
	g := exec.Command("/bin/sh", "-c", guardianScript)
	g.Stdin = r
	g.Env = []string{"PATH=/usr/bin:/bin"}
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = g.Start()
	r.Close()
	if err != nil {
		w.Close()
		return 0, nil, nil, fmt.Errorf("bash: could not start the process group guardian: %w", err)
	}
	return g.Process.Pid, w, func() { _ = g.Wait() }, nil
}

// runShell runs command in dir as `bash -c` in a process group of its own,
// led by a guardian (startGuardian). On timeout or cancellation the whole
// group gets SIGTERM, then SIGKILL after grace; the call returns once the
// shell has exited and its output pipes are drained (pipes still held by
// processes that left the group are closed after grace). When the call
// returns, nothing of it is left running: what remains of the group is
// killed. If the server dies, the guardian kills the group.
func runShell(ctx context.Context, dir, command string, timeout, grace time.Duration) (BashValue, error) {
	v := BashValue{Kind: "foreground", TimeoutMs: float64(timeout) / float64(time.Millisecond)}
	pgid, lifeline, waitGuardian, err := startGuardian()
	if err != nil {
		return v, err
	}
	defer func() {
		lifeline.Close() // the guardian kills what is left of the group
		waitGuardian()
	}()
	outR, outW, err := os.Pipe()
	if err != nil {
		return v, fmt.Errorf("bash: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return v, fmt.Errorf("bash: stderr pipe: %w", err)
	}
	cmd := exec.Command(shellPath(), "-c", command)
	cmd.Dir = dir
	cmd.Env = bashEnv()
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	startErr := cmd.Start()
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		return v, fmt.Errorf("bash: could not start the command: %w", startErr)
	}

	stdout, stderr := &tailBuffer{max: BashMaxOutputBytes}, &tailBuffer{max: BashMaxOutputBytes}
	var readers sync.WaitGroup
	readers.Go(func() { _, _ = io.Copy(stdout, outR) })
	readers.Go(func() { _, _ = io.Copy(stderr, errR) })
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		v.TimedOut = true
		terminateGroup(pgid, exited, grace)
	case <-ctx.Done():
		v.Aborted = true
		terminateGroup(pgid, exited, grace)
	}
	select {
	case <-drained:
	case <-time.After(grace):
		// Something outside the shell still holds the pipes: end what is
		// left of the group and stop reading.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()

	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = "SIG" + strconv.Itoa(int(ws.Signal()))
		}
		v.Signal = &name
	} else {
		code := cmd.ProcessState.ExitCode()
		v.ExitCode = &code
	}
	v.Stdout, v.Stderr = stdout.output(), stderr.output()
	return v, nil
}

// terminateGroup sends SIGTERM to the process group, escalates to SIGKILL
// after grace, and returns once the shell has exited.
func terminateGroup(pgid int, exited <-chan error, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max   int
	buf   []byte
	total int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.total += len(p)
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// output returns the retained tail, starting on a character boundary, with
// invalid UTF-8 replaced.
func (t *tailBuffer) output() BashOutput {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	truncated := t.total > t.max
	if truncated {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return BashOutput{Text: strings.ToValidUTF8(string(b), "\uFFFD"), Truncated: truncated}
}

// streamText appends dsh's truncation notice to a stream's tail; prism keeps
// no spill file, so the full output is "(unavailable)".
func streamText(o BashOutput) string {
	if !o.Truncated {
		return o.Text
	}
	return o.Text + "\n[output truncated; full output: (unavailable)]"
}

// renderShellResult is dsh's renderShellResult: stdout, an optional
// [stderr] section, "(no output)" when both are empty, then the timeout,
// signal or exit-code markers.
func renderShellResult(v BashValue) string {
	body := streamText(v.Stdout)
	if errText := streamText(v.Stderr); errText != "" {
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		body += "[stderr]\n" + errText
	}
	if body == "" {
		body = "(no output)"
	}
	var markers []string
	if v.TimedOut {
		markers = append(markers, fmt.Sprintf("[timed out after %sms]", jsNumber(v.TimeoutMs)))
	}
	switch {
	case v.Signal != nil:
		markers = append(markers, "[killed by signal: "+*v.Signal+"]")
	case v.ExitCode == nil:
		markers = append(markers, "[exit code: null]")
	case *v.ExitCode != 0:
		markers = append(markers, fmt.Sprintf("[exit code: %d]", *v.ExitCode))
	}
	if len(markers) == 0 {
		return body
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + strings.Join(markers, "\n")
}

// presentBashCall is dsh's presentBashCall: a terminal card for a
// foreground command, a generic execute card for a background start.
func presentBashCall(a BashArgs) core.CallView {
	if a.RunInBackground != nil && *a.RunInBackground {
		return &core.GenericCallView{Title: a.Command, Kind: core.KindExecute, RawInput: a.Command,
			Content: core.Text(a.Description)}
	}
	v := &core.TerminalCallView{Title: a.Command, Description: a.Description}
	if a.Workdir != nil {
		v.Cwd = *a.Workdir
	}
	return v
}

// presentBashResult is dsh's presentBashResult: the terminal card with the
// trailing exit marker moved into exitCode or signal; a failure or a
// background start is the generic card with the text in a console fence.
func presentBashResult(a BashArgs, r core.ToolResult) core.ResultView {
	if len(r.Content) != 1 {
		return nil
	}
	tb, ok := r.Content[0].(*core.TextBlock)
	if !ok {
		return nil
	}
	if r.IsError || (a.RunInBackground != nil && *a.RunInBackground) {
		return &core.GenericResultView{Content: core.Text("```console\n" + strings.TrimRight(tb.Text, "\n") + "\n```")}
	}
	body, exitCode, signal := parseExitStatus(tb.Text)
	v := &core.TerminalResultView{Output: &body}
	if signal != "" {
		v.Signal = signal
	} else {
		v.ExitCode = &exitCode
	}
	return v
}

var (
	signalMarker = regexp.MustCompile(`\n\[killed by signal: ([^\]\n]+)\]$`)
	exitMarker   = regexp.MustCompile(`\n\[exit code: (\d+)\]$`)
)

// parseExitStatus splits a rendered result into its body and exit status
// (dsh's parseExitStatus): a trailing signal marker gives the signal, else a
// trailing exit-code marker the code, else a clean exit 0. The consumed
// marker leaves the body; timeout and truncation markers stay.
func parseExitStatus(text string) (body string, exitCode int, signal string) {
	if m := signalMarker.FindStringSubmatchIndex(text); m != nil {
		return text[:m[0]], 0, text[m[2]:m[3]]
	}
	if m := exitMarker.FindStringSubmatchIndex(text); m != nil {
		if n, err := strconv.Atoi(text[m[2]:m[3]]); err == nil {
			return text[:m[0]], n, ""
		}
	}
	return text, 0, ""
}
