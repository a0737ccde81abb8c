package prismtest

import (
	"fmt"
	"slices"

	"prism/core"
	"prism/core/model"
)

// Script is what the scripted model answers, one step per model call, in
// order: a step with text and tool calls, a step of parallel calls, the
// final answer. Build it with NewScript and its chained methods:
//
//	script := prismtest.NewScript().
//		Step("Let me look at the config.", prismtest.Call("read", `{"file_path":"app.toml"}`)).
//		Parallel(prismtest.Call("note", `{"title":"a"}`), prismtest.Call("note", `{"title":"b"}`)).
//		Final("Done.")
//
// Calls get the ids call_1, call_2… in script order unless they name their
// own (ToolCall.WithID), so a test can find their cards. Every step reports
// the same fixed token usage, so pages render the same on every run. A
// model that has played every step answers with a short echo of the last
// user message (the scripted model's rule), ending the turn.
type Script struct {
	steps []model.Step
	calls int
}

// ToolCall is one tool call of a scripted step: the tool's name and the
// raw argument string the model "produced", invalid JSON included.
type ToolCall struct {
	ID, Name, Args string
}

// Call returns a scripted call of tool name with the raw argument string
// args, exactly as a model would send it: "" is a call without arguments,
// `{"a":` an unterminated one.
func Call(name, args string) ToolCall { return ToolCall{Name: name, Args: args} }

// WithID returns the call with the given call id instead of the generated
// call_N.
func (c ToolCall) WithID(id string) ToolCall {
	c.ID = id
	return c
}

// stepUsage is every scripted step's token usage: fixed, since the scripted
// model would otherwise estimate it from the request (which holds the
// temporary workspace path).
var stepUsage = core.TokenUsage{InputTokens: 1000, OutputTokens: 50}

// NewScript returns an empty script.
func NewScript() *Script { return &Script{} }

// Step adds a step that says text ("" for none) and then asks for calls.
// A step without calls ends the turn: use Final for that.
func (s *Script) Step(text string, calls ...ToolCall) *Script {
	st := model.Step{Text: text, Calls: make([]model.ScriptCall, len(calls))}
	for i, c := range calls {
		if c.ID == "" {
			s.calls++
			c.ID = fmt.Sprintf("call_%d", s.calls)
		}
		st.Calls[i] = model.ScriptCall{ID: c.ID, Name: c.Name, Arguments: c.Args}
	}
	return s.Raw(st)
}

// Parallel adds a step that asks for several calls at once; calls of tools
// that are concurrency-safe run in parallel, as the agent loop schedules
// them.
func (s *Script) Parallel(calls ...ToolCall) *Script { return s.Step("", calls...) }

// Final adds the final answer: a step with text and no calls, which ends
// the turn.
func (s *Script) Final(text string) *Script { return s.Raw(model.Step{Text: text}) }

// Raw adds a step as the scripted model plays it: reasoning, a finish
// reason, a failure of the model call, its own usage. Calls without an id
// keep the scripted model's generated ids.
func (s *Script) Raw(step model.Step) *Script {
	if step.Usage == nil {
		u := stepUsage
		step.Usage = &u
	}
	step.Calls = slices.Clone(step.Calls)
	s.steps = append(s.steps, step)
	return s
}

// Steps returns a copy of the script's steps.
func (s *Script) Steps() []model.Step {
	if s == nil {
		return nil
	}
	out := make([]model.Step, len(s.steps))
	for i, st := range s.steps {
		st.Calls = slices.Clone(st.Calls)
		if st.Usage != nil {
			u := *st.Usage
			st.Usage = &u
		}
		out[i] = st
	}
	return out
}
