package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"

	"prism/core/jsonschema"
)

// Definition describes a typed tool. A is the argument type, decoded from
// the model's JSON after it validated against Parameters; V is the canonical
// value type, which must validate against Output.Schema.
type Definition[A, V any] struct {
	// Name is how the model calls the tool.
	Name string
	// Description is sent to the model.
	Description string
	// Parameters is dsh's parameter DSL as JSON text: a property map whose
	// properties may carry "required": true, e.g.
	//   {"title": {"type": "string", "required": true, "description": "Note title"}}
	// Empty means no parameters ({}).
	Parameters string
	// Output declares the canonical value and its projections.
	Output Output[A, V]
	// Execute runs one accepted call and returns only its canonical value. It
	// must observe ctx and return only after its own work has stopped.
	Execute func(ctx context.Context, args A, run *Run) (V, error)
	// IsConcurrencySafe reports whether a call may overlap with its siblings.
	// Only true is parallel; nil, a panic or invalid arguments are exclusive.
	IsConcurrencySafe func(args A) bool
	// Timeout is the call's cooperative deadline (0 = none). It is never sent
	// to the model.
	Timeout time.Duration
	// Pure declares that Execute has no side effects and depends only on
	// its arguments: the same call always gives the same result. Nothing in
	// the pipeline changes; tests generated from a recorded call (prism
	// testgen) rerun a pure tool's call and compare it with the recording.
	Pure bool
	// PresentCall presents the pending call; nil (or a nil view) is the
	// generic card. It must be a pure function of args.
	PresentCall func(args A) CallView
	// PresentResult presents the completed call from the durable result; nil
	// (or a nil view) keeps the pending title over the raw content.
	PresentResult func(args A, result ToolResult) ResultView
	// FinalizeContent, when set, runs exactly once on every call's final
	// result (see FinalizeFunc).
	FinalizeContent FinalizeFunc
}

// FinalizeFunc is dsh's finalizeContent: the last word on a call's
// model-facing content. The registry captures it when the call starts and
// runs it exactly once for every outcome — successes, failures that
// bypassed post-execute, blocked results — after post-execute and the
// lossless materialization. It may replace only the content: a nil return
// keeps the content as it is, any other (an empty Content included)
// replaces it. It must be pure, total and quick; a panic, or content that
// is not lossless, fails the call with "Error: <message>".
type FinalizeFunc func(exec *Execution, result Result) Content

// Output is a tool's canonical output contract.
type Output[A, V any] struct {
	// Schema is dsh's value-schema DSL as JSON text, enforced against every
	// successful value (from the body or a post-execute replacement).
	Schema string
	// Render projects the validated value into model-facing content.
	Render func(args A, value V) (Content, error)
	// PresentationMeta projects UI-only metadata, persisted as
	// tool/result.data.meta; computed only for top-level calls. Optional.
	PresentationMeta func(args A, value V) (any, error)
}

// Tool is a registered tool with its types erased. Build one with Define.
type Tool struct {
	name        string
	description string
	params      *jsonschema.Schema
	paramsJSON  json.RawMessage
	output      *jsonschema.Schema
	timeout     time.Duration
	pure        bool
	finalize    FinalizeFunc
	// raw marks a tool defined with DefineRaw: its arguments are never
	// validated and its render and meta receive the value's JSON tree.
	raw  bool
	impl toolImpl
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Timeout returns the tool's cooperative deadline (0 = none).
func (t *Tool) Timeout() time.Duration { return t.timeout }

// Pure reports whether the tool's definition declares it free of side
// effects (Definition.Pure, RawDefinition.Pure).
func (t *Tool) Pure() bool { return t.pure }

// Schema returns the model-visible projection of the tool.
func (t *Tool) Schema() ToolSchema {
	return ToolSchema{Name: t.name, Description: t.description, Parameters: t.paramsJSON}
}

// toolImpl is the typed half of a Tool.
type toolImpl interface {
	// decodeArgs validates the generic arguments and decodes them into A.
	decodeArgs(exec *Execution) (any, error)
	execute(ctx context.Context, args any, run *Run) (any, error)
	// decodeValue decodes a lossless replacement value into V.
	decodeValue(data json.RawMessage) (any, error)
	render(args, value any) (Content, error)
	meta(args, value any) (any, bool, error)
	concurrencySafe(tree any) bool
	presentCall(tree any) CallView
	presentResult(tree any, r ToolResult) ResultView
}

// Define compiles a typed definition into a registrable Tool, refusing an
// invalid definition with dsh's messages.
func Define[A, V any](d Definition[A, V]) (*Tool, error) {
	if d.Name == "" {
		return nil, errors.New("tool name must be a non-empty string")
	}
	if d.Output.Render == nil {
		return nil, missingOutput(d.Name)
	}
	if d.Execute == nil {
		return nil, fmt.Errorf("tool %q must declare execute", d.Name)
	}
	if d.Timeout < 0 {
		return nil, fmt.Errorf("defineTool(%s): timeoutMs must be a positive finite number", d.Name)
	}
	dsl := strings.TrimSpace(d.Parameters)
	if dsl == "" {
		dsl = "{}"
	}
	params, err := jsonschema.CompileParameters([]byte(dsl))
	if err != nil {
		return nil, fmt.Errorf("tool %q parameters: %w", d.Name, err)
	}
	paramsJSON, err := params.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("tool %q parameters: %w", d.Name, err)
	}
	if strings.TrimSpace(d.Output.Schema) == "" {
		return nil, missingOutput(d.Name)
	}
	out, err := jsonschema.CompileValue([]byte(d.Output.Schema))
	if err != nil {
		return nil, fmt.Errorf("tool %q output: %w", d.Name, err)
	}
	return &Tool{
		name:        d.Name,
		description: d.Description,
		params:      params,
		paramsJSON:  paramsJSON,
		output:      out,
		timeout:     d.Timeout,
		pure:        d.Pure,
		finalize:    d.FinalizeContent,
		impl:        &typedTool[A, V]{def: d, params: params},
	}, nil
}

// missingOutput is dsh register's refusal of a definition without output
// or render.
func missingOutput(name string) error {
	return fmt.Errorf("tool %q must declare output { schema, render, presentationMeta? }", name)
}

// MustDefine is Define for package-level tool values; it panics on an
// invalid definition.
func MustDefine[A, V any](d Definition[A, V]) *Tool {
	t, err := Define(d)
	if err != nil {
		panic(err)
	}
	return t
}

type typedTool[A, V any] struct {
	def    Definition[A, V]
	params *jsonschema.Schema
}

// argsError is dsh's ToolArgsError.
func argsError(violations []string) error {
	return &Error{Name: "ToolArgsError", Code: CodeInvalidArgs,
		Message: "invalid arguments: " + strings.Join(violations, "; ")}
}

func (t *typedTool[A, V]) decodeArgs(exec *Execution) (any, error) {
	if v := t.params.Validate(exec.Arguments, ""); len(v) > 0 {
		return nil, argsError(v)
	}
	a, err := decodeTyped[A](exec.Arguments, exec.RawArguments)
	if err != nil {
		return nil, argsError([]string{err.Error()})
	}
	return a, nil
}

// decodeTyped converts a validated generic tree into T, decoding the raw
// text directly when it is the tree's source. encoding/json matches object
// keys to struct fields case-insensitively, so a key the schema saw as
// undeclared ("MODE") could land in a declared field ("mode") past its
// checks; such keys are dropped first (see dropCaseAliases), and then the
// tree, not the raw text, is decoded.
func decodeTyped[T any](tree any, raw string) (T, error) {
	var out T
	pruned, changed := dropCaseAliases(tree, reflect.TypeFor[T]())
	data := textBytes(raw)
	if raw == "" || tree == nil || changed {
		var err error
		if data, err = json.Marshal(pruned); err != nil {
			return out, err
		}
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, err
	}
	return out, nil
}

// dropCaseAliases returns tree without the object keys that match a JSON
// field name of the struct it decodes into only case-insensitively,
// recursing through nested structs, slices, arrays, maps and pointers. The
// input is never modified; changed reports whether a copy was made.
func dropCaseAliases(tree any, t reflect.Type) (out any, changed bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := tree.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := jsonFields(t)
			var cp map[string]any
			for k, v := range x {
				ft, exact := fields.exact[k]
				if !exact {
					if _, alias := fields.folded[strings.ToLower(k)]; alias {
						cp = copyOnce(cp, x)
						delete(cp, k)
					}
					continue
				}
				if nv, ch := dropCaseAliases(v, ft); ch {
					cp = copyOnce(cp, x)
					cp[k] = nv
				}
			}
			if cp != nil {
				return cp, true
			}
		case reflect.Map:
			var cp map[string]any
			for k, v := range x {
				if nv, ch := dropCaseAliases(v, t.Elem()); ch {
					cp = copyOnce(cp, x)
					cp[k] = nv
				}
			}
			if cp != nil {
				return cp, true
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return tree, false
		}
		var cp []any
		for i, v := range x {
			if nv, ch := dropCaseAliases(v, t.Elem()); ch {
				if cp == nil {
					cp = append([]any(nil), x...)
				}
				cp[i] = nv
			}
		}
		if cp != nil {
			return cp, true
		}
	}
	return tree, false
}

func copyOnce(cp, src map[string]any) map[string]any {
	if cp != nil {
		return cp
	}
	return maps.Clone(src)
}

// fieldSet is a struct's JSON field names: exact name → field type, and
// the lower-cased names.
type fieldSet struct {
	exact  map[string]reflect.Type
	folded map[string]bool
}

var fieldSets sync.Map // reflect.Type → *fieldSet

// jsonFields returns the JSON field names encoding/json decodes into for
// struct type t, including promoted fields of embedded structs.
func jsonFields(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{exact: map[string]reflect.Type{}, folded: map[string]bool{}}
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct && depth < 16 {
					walk(ft, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := fs.exact[name]; !dup {
				fs.exact[name] = f.Type
			}
			fs.folded[strings.ToLower(name)] = true
		}
	}
	walk(t, 0)
	actual, _ := fieldSets.LoadOrStore(t, fs)
	return actual.(*fieldSet)
}

func (t *typedTool[A, V]) execute(ctx context.Context, args any, run *Run) (any, error) {
	return t.def.Execute(ctx, args.(A), run)
}

func (t *typedTool[A, V]) decodeValue(data json.RawMessage) (any, error) {
	var v V
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

func (t *typedTool[A, V]) render(args, value any) (Content, error) {
	return t.def.Output.Render(args.(A), value.(V))
}

func (t *typedTool[A, V]) meta(args, value any) (any, bool, error) {
	if t.def.Output.PresentationMeta == nil {
		return nil, false, nil
	}
	m, err := t.def.Output.PresentationMeta(args.(A), value.(V))
	return m, true, err
}

// softArgs validates and decodes arguments for a pure classifier or
// presenter; invalid (for example obsolete, logged) arguments give ok=false.
func (t *typedTool[A, V]) softArgs(tree any) (a A, ok bool) {
	if len(t.params.Validate(tree, "")) > 0 {
		return a, false
	}
	a, err := decodeTyped[A](tree, "")
	return a, err == nil
}

func (t *typedTool[A, V]) concurrencySafe(tree any) bool {
	f := t.def.IsConcurrencySafe
	if f == nil {
		return false
	}
	a, ok := t.softArgs(tree)
	return ok && guarded(func() bool { return f(a) })
}

func (t *typedTool[A, V]) presentCall(tree any) CallView {
	f := t.def.PresentCall
	if f == nil {
		return nil
	}
	a, ok := t.softArgs(tree)
	if !ok {
		return nil
	}
	return guarded(func() CallView { return f(a) })
}

func (t *typedTool[A, V]) presentResult(tree any, r ToolResult) ResultView {
	f := t.def.PresentResult
	if f == nil {
		return nil
	}
	a, ok := t.softArgs(tree)
	if !ok {
		return nil
	}
	return guarded(func() ResultView { return f(a, r) })
}
