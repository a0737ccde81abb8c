package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/sources/dsh"
)

// runFork forks a stored session at a completed turn into a new one
// (agent.Runner.Fork, the operation the server's fork API runs): the
// source's events through that turn's turn/end, then session/end-seed.
// With --prompt the fork then runs one turn here, on the configured model
// (--model, the agent flags of serve), its calls answered from the
// source's recorded results while they repeat the source's (--tools
// replay, the default) or all run (--tools live); the command waits for
// the turn to end. It prints the fork's id.
func runFork(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fork", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	atTurn := fs.Int("at-turn", -1, "fork after the turn/end of this turn (0: before the first turn); required")
	as := fs.String("as", "", "the fork's id (default: a new one)")
	prompt := fs.String("prompt", "", "run this prompt as the fork's first turn (default: none, the fork waits for a message)")
	system := fs.String("system", "", "the fork's own system prompt (default: the configured one)")
	title := fs.String("title", "", `the fork's title (default: the prompt's first line, or: fork of “<the source's title>” at turn N)`)
	tools := fs.String("tools", agent.ToolsReplay, `"replay": answer calls that repeat the source's with its recorded results; "live": run every call`)
	af := addAgentFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	const usageLine = "prism fork [--db PATH] ID --at-turn N [--as NEW_ID] [--prompt TEXT] [--model NAME] [--system TEXT] [--tools replay|live] [--title TEXT]"
	if len(pos) != 1 {
		return fmt.Errorf("%w: %s", errUsage, usageLine)
	}
	if *atTurn < 0 {
		return fmt.Errorf("%w: --at-turn N is required (0 or more): %s", errUsage, usageLine)
	}
	if *tools != agent.ToolsReplay && *tools != agent.ToolsLive {
		return fmt.Errorf("%w: --tools must be replay or live, not %q", errUsage, *tools)
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if !explicit["demo-call-time"] {
		af.demoCallTime = "0" // nobody watches the pending cards of a command
	}
	af.demoPacing = &model.Pacing{}
	if err := storeExists(*dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, dsh.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()

	id := strings.TrimSpace(*as)
	if id == "" {
		id = core.NewID()
	}
	ended := make(chan core.TurnEndReason, 1)
	onEvent := func(sid string, e core.Event) {
		if sid != id || e.Type != core.EventTurnEnd {
			return
		}
		var d core.TurnEnd
		_ = e.DecodeData(&d)
		select {
		case ended <- d.Reason:
		default:
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := af.runnerConfig(st, onEvent, logger)
	if err != nil {
		return err
	}
	r, err := agent.NewRunner(cfg)
	if err != nil {
		return err
	}
	defer r.Close() // waits for the replayed notes
	n := *atTurn
	got, err := r.Fork(ctx, agent.ForkRequest{Source: pos[0], ID: id, Boundary: core.ForkBoundary{AtTurn: &n},
		Prompt: *prompt, System: *system, Tools: *tools, Title: *title})
	if err != nil {
		return fmt.Errorf("prism fork: %w", err)
	}
	if strings.TrimSpace(*prompt) != "" {
		select {
		case reason := <-ended:
			fmt.Fprintf(stderr, "prism fork: %s forked %s at turn %d; its turn ended: %s\n", got, pos[0], n, reason.Kind)
		case <-ctx.Done():
			return fmt.Errorf("prism fork %s: %w", got, context.Cause(ctx))
		}
	} else {
		fmt.Fprintf(stderr, "prism fork: %s forked %s at turn %d\n", got, pos[0], n)
	}
	_, err = fmt.Fprintln(stdout, got)
	return err
}
