package backend

import (
	"context"

	"prism/core"
	"prism/core/agent"
	"prism/web"
)

// AgentRunner adapts *agent.Runner to the runner web consumes.
type AgentRunner struct{ Runner *agent.Runner }

var (
	_ web.Runner       = AgentRunner{}
	_ web.SessionOwner = AgentRunner{}
)

// StartSession implements web.Runner.
func (w AgentRunner) StartSession(ctx context.Context, req web.StartRequest) (string, error) {
	return w.Runner.Start(ctx, agent.StartRequest{Prompt: req.Prompt, Model: req.Model, Workspace: req.Workspace})
}

// SendMessage implements web.Runner: the message is queued behind a
// running turn.
func (w AgentRunner) SendMessage(ctx context.Context, sessionID, text string) error {
	return w.Runner.Send(ctx, sessionID, text)
}

// Cancel implements web.Runner.
func (w AgentRunner) Cancel(_ context.Context, sessionID string) error {
	return w.Runner.Cancel(sessionID)
}

// Owns implements web.SessionOwner: the runner takes follow-up messages
// for, and cancels turns of, only the sessions it started in this process —
// not imported or watched ones, nor those of a previous run.
func (w AgentRunner) Owns(id string) bool {
	_, err := w.Runner.Status(id)
	return err == nil
}

// CancelWith cancels the running turn of a session this process runs with
// a cause its turn/end records (an attention rule's hook cause);
// core.CodeNotFound for a session it does not run.
func (w AgentRunner) CancelWith(sessionID string, cause core.CancelCause) error {
	return w.Runner.CancelWith(sessionID, cause)
}

var _ web.Forker = AgentRunner{}

// ForkSession implements web.Forker: agent.Runner.Fork, the fork the CLI
// makes too.
func (w AgentRunner) ForkSession(ctx context.Context, req web.ForkRequest) (string, error) {
	return w.Runner.Fork(ctx, agent.ForkRequest{
		Source: req.Source, ID: req.ID, Boundary: core.ForkBoundary{AtTurn: req.AtTurn, AtSeq: req.AtSeq},
		Prompt: req.Prompt, Model: req.Model, System: req.System, Tools: req.Tools, Title: req.Title,
	})
}
