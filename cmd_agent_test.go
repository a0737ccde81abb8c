package main

import (
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
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
