package tools

import (
	"context"
	"strings"

	"prism/core"
)

// SubagentName is the subagent tool's name (dsh's).
const SubagentName = "subagent"

// DefaultMaxDelegationDepth is dsh's depth cap: a session at this
// delegation depth may not start another subagent.
const DefaultMaxDelegationDepth = 3

// SubagentArgs are the subagent tool's arguments (dsh's).
type SubagentArgs struct {
	// Description is a short label of the delegated task: the child's
	// subagent/descriptor label and its card's title.
	Description string `json:"description"`
	// Prompt is the child's first user message.
	Prompt string `json:"prompt"`
	// Tools, when set, limits the child to these of its parent's tools.
	Tools []string `json:"tools,omitempty"`
	// Model names the child's model ("" = the parent's).
	Model string `json:"model,omitempty"`
	// Background returns at once with the child's id while it goes on.
	Background bool `json:"background,omitempty"`
}

// SubagentValue is the subagent tool's canonical value.
type SubagentValue struct {
	// Child is the child session's id.
	Child string `json:"child"`
	// Background says the call returned without waiting for the child.
	Background bool `json:"background"`
	// Text is a foreground child's final text (what the model reads).
	Text string `json:"text"`
}

// SubagentMeta is the subagent tool's presentation meta: which session
// the call started (the link note says the same while the call runs).
type SubagentMeta struct {
	Child      string `json:"child"`
	Background bool   `json:"background"`
}

// Spawner starts a child session for one subagent call of the session
// run names and, unless args.Background, waits for its turn: the agent
// runner's (agent.Runner.Spawn). A returned error is the call's error
// result.
type Spawner func(ctx context.Context, args SubagentArgs, run *core.Run) (SubagentValue, error)

// NewSubagent returns the subagent tool starting children through spawn.
// A nil spawn gives a tool that only presents logged calls (the cards of
// imported sessions) and refuses to run one.
func NewSubagent(spawn Spawner) *core.Tool { return core.MustDefine(SubagentDefinition(spawn)) }

// SubagentDefinition returns the subagent tool's typed definition:
// dsh's parameters, the foreground result's content the child's final text,
// a background result's the child's id; calls are concurrency-safe, so the
// children of one step run in parallel.
func SubagentDefinition(spawn Spawner) core.Definition[SubagentArgs, SubagentValue] {
	return core.Definition[SubagentArgs, SubagentValue]{
		Name: SubagentName,
		Description: "Delegate a self-contained task to a subagent: a fresh agent in a session of its own, in the same workspace, " +
			"that sees only the prompt you give it. Foreground (the default) returns the subagent's final answer; " +
			"background: true returns its session id at once while it works on.",
		Parameters: `{
			"description": {"type": "string", "required": true, "description": "A short (3-8 word) label of the task"},
			"prompt": {"type": "string", "required": true, "description": "The complete task for the subagent: it sees nothing else"},
			"tools": {"type": "array", "items": {"type": "string"}, "description": "Limit the subagent to these of your tools (default: all)"},
			"model": {"type": "string", "description": "The subagent's model (default: yours)"},
			"background": {"type": "boolean", "description": "Return at once with the subagent's id instead of waiting for its answer"}}`,
		Output: core.Output[SubagentArgs, SubagentValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {
				"child": {"type": "string", "required": true},
				"background": {"type": "boolean", "required": true},
				"text": {"type": "string", "required": true}}}`,
			Render: func(_ SubagentArgs, v SubagentValue) (core.Content, error) {
				if v.Background {
					return core.Text("Started subagent " + v.Child + " in the background."), nil
				}
				if strings.TrimSpace(v.Text) == "" {
					return core.Text("(the subagent finished without a final answer)"), nil
				}
				return core.Text(v.Text), nil
			},
			PresentationMeta: func(_ SubagentArgs, v SubagentValue) (any, error) {
				return SubagentMeta{Child: v.Child, Background: v.Background}, nil
			},
		},
		Execute: func(ctx context.Context, a SubagentArgs, run *core.Run) (SubagentValue, error) {
			if spawn == nil {
				return SubagentValue{}, core.Errorf(core.CodeUnavailable, "subagent: this server runs no agent, so it cannot start one")
			}
			if strings.TrimSpace(a.Description) == "" || strings.TrimSpace(a.Prompt) == "" {
				return SubagentValue{}, core.Errorf(core.CodeInvalid, "subagent: description and prompt must not be empty")
			}
			return spawn(ctx, a, run)
		},
		IsConcurrencySafe: func(SubagentArgs) bool { return true },
		PresentCall: func(a SubagentArgs) core.CallView {
			title := a.Description
			if a.Background {
				title += " (background)"
			}
			return &core.GenericCallView{Title: title, Kind: core.KindOther, Content: core.Text(a.Prompt)}
		},
		PresentResult: func(a SubagentArgs, r core.ToolResult) core.ResultView {
			return &core.GenericResultView{Title: a.Description, Content: r.Content}
		},
	}
}
