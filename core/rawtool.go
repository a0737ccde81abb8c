package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"prism/core/jsonschema"
)

// RawDefinition describes a tool that owns its input (dsh's raw
// ToolDefinition, the way MCP tools are registered): Parameters is a JSON
// Schema the model sees as is, and the registry never validates arguments
// against it. Execute receives the arguments exactly as dsh's loop parses
// them — an object, an array, any JSON value, or the raw string itself when
// the model's text is not JSON — after the lossless snapshot (so 1e400 and
// -0 are still refused before the body runs).
type RawDefinition struct {
	// Name is how the model calls the tool.
	Name string
	// Description is sent to the model.
	Description string
	// Parameters is the JSON Schema object sent to the model as is. Empty
	// means {"type":"object"}.
	Parameters json.RawMessage
	// Output declares the canonical value and its projections; it is
	// required, as in dsh.
	Output *RawOutput
	// Execute runs one call and returns its canonical value (any Go value
	// with a lossless JSON form). It must observe ctx and return only after
	// its own work has stopped.
	Execute func(ctx context.Context, args any, run *Run) (any, error)
	// IsConcurrencySafe reports whether a call may overlap with its
	// siblings. Only true is parallel; nil or a panic is exclusive.
	IsConcurrencySafe func(args any) bool
	// Timeout is the call's cooperative deadline (0 = none).
	Timeout time.Duration
	// Pure declares that Execute has no side effects (see Definition.Pure).
	Pure bool
	// PresentCall presents the pending call from the parsed arguments; nil
	// (or a nil view) is the generic card.
	PresentCall func(args any) CallView
	// PresentResult presents the completed call; nil (or a nil view) keeps
	// the pending title over the raw content.
	PresentResult func(args any, result ToolResult) ResultView
	// FinalizeContent, when set, runs exactly once on every final result.
	FinalizeContent FinalizeFunc
}

// RawOutput is a raw tool's output contract. Render and PresentationMeta
// receive the canonical value as a generic JSON tree (map[string]any,
// []any, float64, string, bool, nil) decoded from its lossless snapshot, so
// a body's value and a post-execute replacement look the same to them.
type RawOutput struct {
	// Schema is a node of dsh's enforced JSON-Schema subset, checked against
	// every successful value. Required; an unsupported keyword refuses the
	// definition with dsh's UNSUPPORTED_SCHEMA error.
	Schema json.RawMessage
	// Render projects the value into model-facing content. Required.
	Render func(args, value any) (Content, error)
	// PresentationMeta projects UI-only metadata, persisted as
	// tool/result.data.meta; computed for top-level calls only. Optional.
	PresentationMeta func(args, value any) (any, error)
}

// DefineRaw compiles a raw definition into a registrable Tool. It refuses a
// definition without output or render with dsh's message, and an output
// schema outside the enforced subset with the *jsonschema.Error whose text
// is dsh's ("unsupported JSON schema: …", code UNSUPPORTED_SCHEMA).
func DefineRaw(d RawDefinition) (*Tool, error) {
	if d.Name == "" {
		return nil, errors.New("tool name must be a non-empty string")
	}
	if d.Output == nil || d.Output.Render == nil || len(d.Output.Schema) == 0 {
		return nil, missingOutput(d.Name)
	}
	if d.Execute == nil {
		return nil, fmt.Errorf("tool %q must declare execute", d.Name)
	}
	if d.Timeout < 0 {
		return nil, fmt.Errorf("tool %q timeoutMs must be a positive finite number", d.Name)
	}
	params := d.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	paramsJSON, err := Snapshot(params)
	if err != nil || len(paramsJSON) == 0 || paramsJSON[0] != '{' {
		return nil, fmt.Errorf("tool %q parameters must be a lossless JSON Schema object", d.Name)
	}
	out, err := jsonschema.Parse(d.Output.Schema)
	if err != nil {
		return nil, err
	}
	return &Tool{
		name:        d.Name,
		description: d.Description,
		paramsJSON:  paramsJSON,
		output:      out,
		timeout:     d.Timeout,
		pure:        d.Pure,
		finalize:    d.FinalizeContent,
		raw:         true,
		impl:        &rawTool{def: d},
	}, nil
}

// MustDefineRaw is DefineRaw that panics on an invalid definition.
func MustDefineRaw(d RawDefinition) *Tool {
	t, err := DefineRaw(d)
	if err != nil {
		panic(err)
	}
	return t
}

// SplitMCPName splits dsh's name of an MCP tool, mcp__<server>__<tool>,
// into its server and tool parts; ok is false for any other name. Server
// names never contain "__", so the first "__" after the prefix ends them.
func SplitMCPName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}

// rawTool is the toolImpl of a raw definition: arguments and values are
// generic JSON trees.
type rawTool struct{ def RawDefinition }

func (t *rawTool) decodeArgs(exec *Execution) (any, error) { return exec.Arguments, nil }

func (t *rawTool) execute(ctx context.Context, args any, run *Run) (any, error) {
	return t.def.Execute(ctx, args, run)
}

func (t *rawTool) decodeValue(data json.RawMessage) (any, error) {
	var v any
	err := json.Unmarshal(data, &v)
	return v, err
}

func (t *rawTool) render(args, value any) (Content, error) { return t.def.Output.Render(args, value) }

func (t *rawTool) meta(args, value any) (any, bool, error) {
	if t.def.Output.PresentationMeta == nil {
		return nil, false, nil
	}
	m, err := t.def.Output.PresentationMeta(args, value)
	return m, true, err
}

func (t *rawTool) concurrencySafe(tree any) bool {
	f := t.def.IsConcurrencySafe
	return f != nil && guarded(func() bool { return f(tree) })
}

func (t *rawTool) presentCall(tree any) CallView {
	f := t.def.PresentCall
	if f == nil {
		return nil
	}
	return guarded(func() CallView { return f(tree) })
}

func (t *rawTool) presentResult(tree any, r ToolResult) ResultView {
	f := t.def.PresentResult
	if f == nil {
		return nil
	}
	return guarded(func() ResultView { return f(tree, r) })
}

// guarded runs a pure classifier or presenter; a panic gives the zero
// value (exclusive, or the generic card).
func guarded[T any](f func() T) (v T) {
	defer func() {
		if recover() != nil {
			var zero T
			v = zero
		}
	}()
	return f()
}
