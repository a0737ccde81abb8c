package main

import (
	"flag"
	"io"
	"log/slog"
	"testing"

	"prism/core/agent"
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
