package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/agent"
	"prism/core/approval"
	"prism/core/logkey"
	"prism/core/model"
	"prism/core/notes"
	"prism/core/tools"
	"prism/store"
	"prism/web"
)

// agentFlags are the agent runner's command-line settings; each flag also
// reads a PRISM_* environment variable as its default. The API key is read
// from the environment only (a flag would show it in the process list).
type agentFlags struct {
	model     string
	baseURL   string
	workspace string
	roots     string
	allowBash bool
	maxSteps  int
	// maxDepth caps how deep subagents nest.
	maxDepth int
	// Approvals: the tools and argument patterns whose calls ask a
	// person, how long a call waits, and the sessions' default policy.
	ask             listFlag
	askRules        listFlag
	approvalTimeout string // a duration; "" or 0 = no limit
	approvalPolicy  string
	// demoPacing overrides the scripted demo's pacing (tests: no delay).
	demoPacing *model.Pacing
	// demoCallTime is how long each tool call of a demo session lasts at
	// least (paceDemoCalls): a duration, "0" = no pacing.
	demoCallTime string
}

// listFlag is a repeatable string flag.
type listFlag struct {
	values []string
	set    bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ", ") }

func (l *listFlag) Set(v string) error {
	l.values, l.set = append(l.values, v), true
	return nil
}

// addAgentFlags registers the runner's flags on fs:
//
//	--model NAME        PRISM_MODEL     model name; default deepseek-chat with a key, else "scripted"
//	--base-url URL      PRISM_BASE_URL  OpenAI-compatible endpoint (default https://api.deepseek.com)
//	--workspace DIR     PRISM_WORKSPACE default workspace of sessions on a real model
//	--allow-bash        PRISM_ALLOW_BASH=1 registers the bash tool
//	--max-steps N       PRISM_MAX_STEPS  steps per turn before the guard stops it
//	--max-delegation-depth N  PRISM_MAX_DELEGATION_DEPTH  how deep subagents nest (default 3)
//	--ask TOOLS         PRISM_ASK        calls of these tools wait for a person's approval
//	--ask-rule RULE     PRISM_ASK_RULES  calls whose arguments match wait too (repeatable; env: one per line)
//	--approval-timeout  PRISM_APPROVAL_TIMEOUT  how long a call waits (default: no limit)
//	--approval-policy   PRISM_APPROVAL_POLICY   ask (default) or never: reject what would ask
//
// and PRISM_API_KEY (or DEEPSEEK_API_KEY) supplies the key.
func addAgentFlags(fs *flag.FlagSet) *agentFlags {
	f := &agentFlags{}
	fs.StringVar(&f.model, "model", os.Getenv("PRISM_MODEL"),
		`default model: "scripted" (the offline demo) or an OpenAI-compatible model name; empty = deepseek-chat when an API key is set, else scripted (env PRISM_MODEL)`)
	fs.StringVar(&f.baseURL, "base-url", envOr("PRISM_BASE_URL", model.DefaultBaseURL),
		"OpenAI-compatible chat-completions base URL (env PRISM_BASE_URL; key from PRISM_API_KEY or DEEPSEEK_API_KEY)")
	fs.StringVar(&f.workspace, "workspace", os.Getenv("PRISM_WORKSPACE"),
		"default workspace of sessions on a real model; empty = a fresh directory per session (env PRISM_WORKSPACE)")
	fs.StringVar(&f.roots, "workspace-roots", os.Getenv("PRISM_WORKSPACE_ROOTS"),
		"comma-separated directories a started session may name as its workspace (or a directory below one); default: --workspace (env PRISM_WORKSPACE_ROOTS)")
	fs.BoolVar(&f.allowBash, "allow-bash", envBool("PRISM_ALLOW_BASH"),
		"register the bash tool: commands run with the server's authority (env PRISM_ALLOW_BASH=1)")
	fs.IntVar(&f.maxSteps, "max-steps", envInt("PRISM_MAX_STEPS", agent.DefaultMaxSteps),
		"model steps one turn may take before it is stopped (env PRISM_MAX_STEPS)")
	fs.IntVar(&f.maxDepth, "max-delegation-depth", envInt("PRISM_MAX_DELEGATION_DEPTH", tools.DefaultMaxDelegationDepth),
		"how deep subagents may nest: a session at this depth gets a tool error when it delegates (env PRISM_MAX_DELEGATION_DEPTH)")
	fs.Var(&f.ask, "ask",
		`comma-separated tools whose every call waits for a person's approval in the browser, e.g. write,edit,bash ("*": every tool); repeatable (env PRISM_ASK)`)
	fs.Var(&f.askRules, "ask-rule",
		`a call whose argument matches waits for approval: TOOL:FIELD~REGEXP, or TOOL:FIELD!~REGEXP to ask when it does not match, e.g. 'bash:command~^rm ' or 'write:file_path!~^src/'; repeatable (env PRISM_ASK_RULES, one rule per line)`)
	fs.StringVar(&f.approvalTimeout, "approval-timeout", os.Getenv("PRISM_APPROVAL_TIMEOUT"),
		"how long a call waits for approval before it is cancelled, e.g. 10m; 0 = until decided or the turn is cancelled (env PRISM_APPROVAL_TIMEOUT)")
	fs.StringVar(&f.approvalPolicy, "approval-policy", envOr("PRISM_APPROVAL_POLICY", core.ApprovalPolicyAsk),
		`approval policy of sessions without their own approval/policy event: "ask" a person, or "never" (reject every call that would ask) (env PRISM_APPROVAL_POLICY)`)
	fs.StringVar(&f.demoCallTime, "demo-call-time", envOr("PRISM_DEMO_CALL_TIME", defaultDemoCallTime.String()),
		"how long each tool call of the scripted demo stays pending at least, so its pending card is there to see; 0 = no pause (env PRISM_DEMO_CALL_TIME)")
	return f
}

// defaultDemoCallTime is --demo-call-time's default: half a second.
const defaultDemoCallTime = 500 * time.Millisecond

// demoPause returns --demo-call-time.
func (f *agentFlags) demoPause() (time.Duration, error) {
	if f.demoCallTime == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(f.demoCallTime)
	if err != nil || d < 0 || d > time.Minute {
		return 0, fmt.Errorf("%w: --demo-call-time (PRISM_DEMO_CALL_TIME) %q: want a duration from 0 to 1m, e.g. 500ms", errUsage, f.demoCallTime)
	}
	return d, nil
}

// timeout returns --approval-timeout (0 = no limit).
func (f *agentFlags) timeout() (time.Duration, error) {
	if strings.TrimSpace(f.approvalTimeout) == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(f.approvalTimeout))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--approval-timeout (PRISM_APPROVAL_TIMEOUT) %q: want a duration such as 90s or 10m, or 0 for no limit", f.approvalTimeout)
	}
	return d, nil
}

// rules returns the ask rules: --ask's tools, then --ask-rule's rules
// (PRISM_ASK and PRISM_ASK_RULES when the flags are not given).
func (f *agentFlags) rules() (approval.Rules, error) {
	tools := f.ask.values
	if !f.ask.set {
		tools = []string{os.Getenv("PRISM_ASK")}
	}
	var rs approval.Rules
	for _, list := range tools {
		r, err := approval.ParseTools(list)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r...)
	}
	if !f.askRules.set {
		r, err := approval.ParseLines(os.Getenv("PRISM_ASK_RULES"))
		if err != nil {
			return nil, fmt.Errorf("PRISM_ASK_RULES: %w", err)
		}
		return append(rs, r...), nil
	}
	for _, line := range f.askRules.values {
		r, err := approval.ParseRule(line)
		if err != nil {
			return nil, fmt.Errorf("--ask-rule: %w", err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// apiKey returns the configured API key: PRISM_API_KEY, else DEEPSEEK_API_KEY.
func apiKey() string {
	if k := strings.TrimSpace(os.Getenv("PRISM_API_KEY")); k != "" {
		return k
	}
	return strings.TrimSpace(os.Getenv("DEEPSEEK_API_KEY"))
}

// runnerConfig builds the agent runner's configuration from the parsed
// flags: the built-in tools (bash only when allowed; every file tool
// confined to the session's workspace), the model catalog (the scripted
// demo unless a key is configured) and the given store, event hook and
// logger, plus the extra tools (the MCP servers'). The caller builds the
// runner with agent.NewRunner and must Close it on shutdown.
func (f *agentFlags) runnerConfig(store core.EventStore, onEvent func(sessionID string, e core.Event), logger *slog.Logger, extra ...*core.Tool) (agent.RunnerConfig, error) {
	builtins, err := tools.Builtins(tools.Options{AllowBash: f.allowBash})
	if err != nil {
		return agent.RunnerConfig{}, fmt.Errorf("agent tools: %w", err)
	}
	reg := core.NewRegistry(logger)
	if err := reg.Register(append(builtins, extra...)...); err != nil {
		return agent.RunnerConfig{}, fmt.Errorf("agent tools: %w", err)
	}
	rules, err := f.rules()
	if err != nil {
		return agent.RunnerConfig{}, err
	}
	if len(rules) > 0 {
		reg.UsePreExecute(rules.Hook())
	}
	if _, err := f.timeout(); err != nil {
		return agent.RunnerConfig{}, err
	}
	pause, err := f.demoPause()
	if err != nil {
		return agent.RunnerConfig{}, err
	}
	if pause > 0 {
		reg.UseExecute(paceDemoCalls(pause))
	}
	key := apiKey()
	catalog := model.NewCatalog(model.CatalogConfig{
		OpenAI:     model.OpenAIConfig{BaseURL: f.baseURL, APIKey: key, Logger: logger},
		Default:    f.model,
		DemoPacing: f.demoPacing,
		Logger:     logger,
	})
	if f.model != "" && f.model != model.DemoModelName && f.model != "demo" && key == "" {
		return agent.RunnerConfig{}, fmt.Errorf("model %q needs an API key: set PRISM_API_KEY or DEEPSEEK_API_KEY", f.model)
	}
	if f.maxSteps <= 0 {
		return agent.RunnerConfig{}, fmt.Errorf("--max-steps must be positive, got %d", f.maxSteps)
	}
	if f.maxDepth <= 0 {
		return agent.RunnerConfig{}, fmt.Errorf("--max-delegation-depth must be positive, got %d", f.maxDepth)
	}
	logger.Info("agent runner", logkey.DefaultModel, catalog.Default(), logkey.BaseURL, model.RedactURL(f.baseURL),
		logkey.APIKey, key != "", logkey.Bash, f.allowBash, logkey.Workspace, f.workspace, logkey.AskRules, len(rules))
	load, putNote := forkSources(store)
	return agent.RunnerConfig{
		Store:              store,
		Load:               load,
		PutNote:            putNote,
		Tools:              reg,
		Models:             catalog,
		Workspace:          f.workspace,
		AllowedWorkspaces:  f.allowedWorkspaces(),
		MaxSteps:           f.maxSteps,
		MaxDelegationDepth: f.maxDepth,
		Links:              linkWriter(store),
		OnEvent:            onEvent,
		Logger:             logger,
	}, nil
}

// forkSources returns what a fork reads and writes beside the events
// when the runner's store is a whole store.Store: the source session's
// log and the replayed notes (nil, nil otherwise).
func forkSources(es core.EventStore) (func(context.Context, string) (core.SessionHeader, []core.Event, error), func(context.Context, notes.Input) error) {
	st, ok := es.(store.Store)
	if !ok {
		return nil, nil
	}
	load := func(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			return core.SessionHeader{}, nil, err
		}
		return l.Info.Header, l.Events, nil
	}
	put := func(ctx context.Context, in notes.Input) error {
		_, err := st.PutNote(ctx, in)
		return err
	}
	return load, put
}

// allowedWorkspaces returns the roots a requested workspace must lie in:
// --workspace-roots, else --workspace.
func (f *agentFlags) allowedWorkspaces() []string {
	var roots []string
	for _, r := range strings.Split(f.roots, ",") {
		if r = strings.TrimSpace(r); r != "" {
			roots = append(roots, r)
		}
	}
	if len(roots) == 0 && f.workspace != "" {
		roots = []string{f.workspace}
	}
	return roots
}

// envBool reports whether the environment variable key holds a true value
// ("1", "true", …).
func envBool(key string) bool {
	b, err := strconv.ParseBool(os.Getenv(key))
	return err == nil && b
}

// envInt returns the environment variable key as an int, or def.
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// newAgentRunner builds the agent runner over store from the parsed flags,
// adapted to web.Runner, and the approval service its calls ask (installed
// as the registry's approver). The returned func closes the runner
// (cancelling running turns, so waiting approvals are cancelled, and
// waiting for them), then the approval service; call it on shutdown,
// before closing the store.
func (f *agentFlags) newAgentRunner(store core.EventStore, logger *slog.Logger, extra ...*core.Tool) (web.Runner, *approval.Service, func(), error) {
	cfg, err := f.runnerConfig(store, nil, logger, extra...)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := agent.NewRunner(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cfg.Tools.Register(r.SubagentTool()); err != nil {
		_ = r.Close()
		return nil, nil, nil, fmt.Errorf("agent tools: %w", err)
	}
	timeout, _ := f.timeout() // checked by runnerConfig
	svc, err := approval.NewService(approval.Config{Sessions: r, Timeout: timeout, Policy: f.approvalPolicy, Logger: logger})
	if err != nil {
		_ = r.Close()
		return nil, nil, nil, fmt.Errorf("--approval-policy (PRISM_APPROVAL_POLICY): %w", err)
	}
	cfg.Tools.SetApprover(svc)
	return backend.AgentRunner{Runner: r}, svc, func() { _ = r.Close(); svc.Close() }, nil
}

// linkWriter returns how the runner writes a subagent's link note: the
// store's PutNote when it keeps notes, else nothing.
func linkWriter(st core.EventStore) func(context.Context, notes.Input) error {
	n, ok := st.(interface {
		PutNote(context.Context, notes.Input) (notes.Note, error)
	})
	if !ok {
		return nil
	}
	return func(ctx context.Context, in notes.Input) error {
		_, err := n.PutNote(ctx, in)
		return err
	}
}

// demoWorkspacePrefix begins the name of a demo session's workspace (the
// scripted demo model's seeded directory, agent.Runner's "prism-demo-ID").
const demoWorkspacePrefix = "prism-demo-"

// paceDemoCalls is execute middleware that makes each tool call of a demo
// session (one working in the demo's seeded workspace) last at least d:
// the demo's tools finish in milliseconds, and a newcomer should see the
// pending card the product is about before it completes. Other sessions'
// calls, and a cancelled call, are not held.
func paceDemoCalls(d time.Duration) core.ExecuteHook {
	return func(ctx context.Context, exec *core.Execution, next func(context.Context) core.Result) (core.Result, error) {
		if !strings.HasPrefix(filepath.Base(exec.Cwd), demoWorkspacePrefix) {
			return next(ctx), nil
		}
		start := time.Now()
		res := next(ctx)
		if wait := d - time.Since(start); wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		return res, nil
	}
}
