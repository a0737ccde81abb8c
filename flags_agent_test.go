package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/tools"
	"prism/web"
)

func parseAgentFlags(t *testing.T, args ...string) *agentFlags {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addAgentFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestAgentRunnerConfig(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, k := range []string{"PRISM_MODEL", "PRISM_BASE_URL", "PRISM_API_KEY", "DEEPSEEK_API_KEY", "PRISM_WORKSPACE", "PRISM_ALLOW_BASH", "PRISM_MAX_STEPS"} {
		t.Setenv(k, "")
	}

	cfg, err := parseAgentFlags(t).runnerConfig(nil, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Models.Default(); got != "scripted" {
		t.Errorf("default model without a key = %q", got)
	}
	if _, ok := cfg.Tools.Get("bash"); ok {
		t.Error("bash registered without --allow-bash")
	}
	if _, ok := cfg.Tools.Get("read"); !ok {
		t.Error("read not registered")
	}
	if cfg.MaxSteps != agent.DefaultMaxSteps {
		t.Errorf("max steps = %d", cfg.MaxSteps)
	}

	t.Setenv("DEEPSEEK_API_KEY", "sk-test")
	t.Setenv("PRISM_ALLOW_BASH", "1")
	cfg, err = parseAgentFlags(t).runnerConfig(nil, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Models.Default(); got != "deepseek-chat" {
		t.Errorf("default model with a key = %q", got)
	}
	if _, ok := cfg.Tools.Get("bash"); !ok {
		t.Error("PRISM_ALLOW_BASH=1 did not register bash")
	}
	m, err := cfg.Models.New("")
	if err != nil || m.Info().Provider != "deepseek" {
		t.Errorf("default model = %+v, %v", m, err)
	}

	cfg, err = parseAgentFlags(t, "--model", "scripted", "--max-steps", "7").runnerConfig(nil, nil, logger)
	if err != nil || cfg.Models.Default() != "scripted" || cfg.MaxSteps != 7 {
		t.Errorf("--model scripted: %v %+v", err, cfg)
	}

	t.Setenv("DEEPSEEK_API_KEY", "")
	if _, err := parseAgentFlags(t, "--model", "deepseek-reasoner").runnerConfig(nil, nil, logger); err == nil {
		t.Error("a keyless real model was accepted")
	}
	if _, err := parseAgentFlags(t, "--max-steps", "0").runnerConfig(nil, nil, logger); err == nil {
		t.Error("--max-steps 0 was accepted")
	}
	if _, err := agent.NewRunner(cfg); err != nil {
		t.Errorf("NewRunner: %v", err)
	}
}

// TestAgentRunnerOverStore runs the scripted demo through the web adapter
// into the SQLite store.
func TestAgentRunnerOverStore(t *testing.T) {
	for _, k := range []string{"PRISM_MODEL", "PRISM_API_KEY", "DEEPSEEK_API_KEY", "PRISM_ALLOW_BASH"} {
		t.Setenv(k, "")
	}
	t.Setenv("TMPDIR", t.TempDir())
	store, feed := openTestStore(t, slog.New(slog.DiscardHandler))
	f := parseAgentFlags(t)
	f.demoPacing = &model.Pacing{}
	r, _, closeRunner, err := f.newAgentRunner(store, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{}, 1)
	defer feed.OnCommit(func(_ string, evs []core.Event) {
		for _, e := range evs {
			if e.Type == core.EventTurnEnd {
				ended <- struct{}{}
			}
		}
	})()
	id, err := r.StartSession(t.Context(), web.StartRequest{Prompt: "Show me around."})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SendMessage(t.Context(), "no-such-session", "hi"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("SendMessage to an unknown session: %v", err)
	}
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the demo turn did not end")
	}
	closeRunner()
	l, err := store.LoadSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	h, evs := l.Info.Header, l.Events
	if h.Cwd == "" || len(evs) < 100 {
		t.Errorf("header %+v, %d events", h, len(evs))
	}
	if err := core.CheckRelations(evs); err != nil {
		t.Error(err)
	}
}

// TestApprovalFlags: --ask, --ask-rule and their environment variables
// become the registry's ask rules (flags win over the environment); bad
// rules, timeouts and policies stop startup naming what is wrong.
func TestApprovalFlags(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		asks     map[string]string // tool → raw arguments that must ask
		nope     map[string]string // tool → raw arguments that must not
		err      string
		policy   string
		deadline time.Duration
	}{
		{name: "none", nope: map[string]string{"write": `{"file_path":"x"}`, "bash": `{"command":"rm -rf /"}`}},
		{name: "tools", args: []string{"--ask", "write, edit", "--ask", "read"},
			asks: map[string]string{"write": `{}`, "edit": `{}`, "read": `{"file_path":"a"}`}, nope: map[string]string{"glob": `{}`}},
		{name: "rules", args: []string{"--ask-rule", "bash:command~^rm ", "--ask-rule", "write:file_path!~^src/"},
			asks: map[string]string{"bash": `{"command":"rm -rf build"}`, "write": `{"file_path":"/etc/x"}`},
			nope: map[string]string{"read": `{"file_path":"a"}`}},
		{name: "environment", env: map[string]string{"PRISM_ASK": "edit", "PRISM_ASK_RULES": "# dangerous\nbash:command~^rm \n", "PRISM_APPROVAL_TIMEOUT": "90s", "PRISM_APPROVAL_POLICY": "never"},
			asks: map[string]string{"edit": `{}`, "bash": `{"command":"rm x"}`}, nope: map[string]string{"bash": `{"command":"ls"}`}, deadline: 90 * time.Second, policy: "never"},
		{name: "flags win over the environment", env: map[string]string{"PRISM_ASK": "edit", "PRISM_ASK_RULES": "bash:command~^rm "},
			args: []string{"--ask", "write", "--ask-rule", "read:file_path~secret"},
			asks: map[string]string{"write": `{}`, "read": `{"file_path":"secret.txt"}`}, nope: map[string]string{"edit": `{}`, "bash": `{"command":"rm x"}`}},
		{name: "bad rule", args: []string{"--ask-rule", "bash:command~("}, err: `--ask-rule: ask rule "bash:command~(": error parsing regexp`},
		{name: "bad environment rule", env: map[string]string{"PRISM_ASK_RULES": "bash\nwrite:path"}, err: `PRISM_ASK_RULES: line 2: ask rule "write:path": no ~ or !~`},
		{name: "pattern in --ask", args: []string{"--ask", "bash:command~rm"}, err: "argument patterns go in --ask-rule"},
		{name: "bad timeout", args: []string{"--approval-timeout", "soon"}, err: `--approval-timeout (PRISM_APPROVAL_TIMEOUT) "soon"`},
		{name: "negative timeout", env: map[string]string{"PRISM_APPROVAL_TIMEOUT": "-1m"}, err: `"-1m"`},
		{name: "bad policy", args: []string{"--approval-policy", "sometimes"}, err: `--approval-policy (PRISM_APPROVAL_POLICY): approval service: policy "sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"PRISM_ASK", "PRISM_ASK_RULES", "PRISM_APPROVAL_TIMEOUT", "PRISM_APPROVAL_POLICY", "PRISM_MODEL", "PRISM_API_KEY", "DEEPSEEK_API_KEY"} {
				t.Setenv(k, tc.env[k])
			}
			f := parseAgentFlags(t, tc.args...)
			_, svc, closeRunner, err := f.newAgentRunner(nil, logger)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeRunner()
			cfg, err := f.runnerConfig(nil, nil, logger)
			if err != nil {
				t.Fatal(err)
			}
			// A call asks when it reaches the approver.
			var asked []string
			cfg.Tools.SetApprover(approverFunc(func(_ context.Context, r core.ApprovalRequest) (core.ApprovalAnswer, error) {
				asked = append(asked, r.ToolName)
				return core.ApprovalAnswer{Outcome: core.ApprovalRejected}, nil
			}))
			run := func(tool, args string) bool {
				asked = nil
				cfg.Tools.Execute(t.Context(), core.Call{Name: tool, RawArguments: args, SessionID: "s1", Cwd: t.TempDir()})
				return len(asked) == 1 && asked[0] == tool
			}
			for tool, args := range tc.asks {
				if !run(tool, args) {
					t.Errorf("%s %s did not ask", tool, args)
				}
			}
			for tool, args := range tc.nope {
				if run(tool, args) {
					t.Errorf("%s %s asked", tool, args)
				}
			}
			if d, _ := f.timeout(); d != tc.deadline {
				t.Errorf("timeout = %v, want %v", d, tc.deadline)
			}
			if want := tc.policy; want == "" {
				if f.approvalPolicy != "ask" {
					t.Errorf("default policy = %q", f.approvalPolicy)
				}
			} else if f.approvalPolicy != want {
				t.Errorf("policy = %q, want %q", f.approvalPolicy, want)
			}
			if svc == nil {
				t.Error("no approval service")
			}
		})
	}
}

type approverFunc func(context.Context, core.ApprovalRequest) (core.ApprovalAnswer, error)

func (f approverFunc) Approve(ctx context.Context, r core.ApprovalRequest) (core.ApprovalAnswer, error) {
	return f(ctx, r)
}

// TestDemoCallsStayPending: with --demo-call-time set (prism serve's half a
// second; shorter here), every tool call of the demo session stays pending
// — its tool/result committed — at least that long after its tool/call,
// while a session in another workspace is not held.
func TestDemoCallsStayPending(t *testing.T) {
	for _, k := range []string{"PRISM_MODEL", "PRISM_API_KEY", "DEEPSEEK_API_KEY", "PRISM_ALLOW_BASH"} {
		t.Setenv(k, "")
	}
	t.Setenv("TMPDIR", t.TempDir())
	const pace = 150 * time.Millisecond
	store, feed := openTestStore(t, slog.New(slog.DiscardHandler))
	f := parseAgentFlags(t, "--demo-call-time", pace.String())
	f.demoPacing = &model.Pacing{}
	r, _, closeRunner, err := f.newAgentRunner(store, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{}, 1)
	defer feed.OnCommit(func(_ string, evs []core.Event) {
		for _, e := range evs {
			if e.Type == core.EventTurnEnd {
				ended <- struct{}{}
			}
		}
	})()
	id, err := r.StartSession(t.Context(), web.StartRequest{Prompt: "Show me around."})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the demo turn did not end")
	}
	closeRunner()
	l, err := store.LoadSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	called := map[string]int64{}
	n := 0
	for _, e := range l.Events {
		var d struct {
			CallID  string `json:"callId"`
			Message struct {
				Source struct {
					CallID string `json:"callId"`
				} `json:"source"`
			} `json:"message"`
		}
		switch e.Type {
		case core.EventToolCall:
			if json.Unmarshal(e.Data, &d) == nil {
				called[d.CallID] = e.Time
			}
		case core.EventToolResult:
			if json.Unmarshal(e.Data, &d) != nil {
				continue
			}
			start, ok := called[d.Message.Source.CallID]
			if !ok {
				continue
			}
			n++
			if gap := time.Duration(e.Time-start) * time.Millisecond; gap < pace {
				t.Errorf("call %s: its result came %v after its call, want at least %v", d.Message.Source.CallID, gap, pace)
			}
		}
	}
	if n < 10 {
		t.Fatalf("%d paired calls in the demo", n)
	}

	// Another workspace: not held.
	reg := core.NewRegistry(nil)
	reg.UseExecute(paceDemoCalls(10 * time.Second))
	builtins, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(builtins...)
	start := time.Now()
	res := reg.Execute(t.Context(), core.Call{CallID: "c1", Name: "note", RawArguments: `{"title":"t"}`, Cwd: t.TempDir()})
	if res.Projection().IsError || time.Since(start) > 5*time.Second {
		t.Fatalf("note outside the demo: %+v after %v", res.Projection(), time.Since(start))
	}
}
