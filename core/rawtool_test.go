package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/jsonschema"
)

// echoOutput is a raw output whose value is {"got": <type>, "args": <args>}.
func echoOutput() *core.RawOutput {
	return &core.RawOutput{
		Schema: json.RawMessage(`{"type":"object","properties":{"got":{"type":"string"},"args":{}},"required":["got"],"additionalProperties":false}`),
		Render: func(args, value any) (core.Content, error) {
			v := value.(map[string]any) // the snapshot's tree, never the body's Go value
			return core.Text(fmt.Sprintf("%s %v", v["got"], v["args"])), nil
		},
		PresentationMeta: func(args, value any) (any, error) {
			return map[string]any{"got": value.(map[string]any)["got"]}, nil
		},
	}
}

// echoTool is a raw tool that reports the Go type its body received.
func echoTool(bodies *int) *core.Tool {
	return core.MustDefineRaw(core.RawDefinition{
		Name:        "echo",
		Description: "echo the arguments",
		Parameters:  json.RawMessage(`{"type": "object", "properties": {"x": {"type": "integer", "minimum": 1}}}`),
		Output:      echoOutput(),
		Execute: func(_ context.Context, args any, _ *core.Run) (any, error) {
			*bodies++
			got := fmt.Sprintf("%T", args)
			if _, ok := args.(string); ok {
				return struct {
					Got  string `json:"got"`
					Args any    `json:"args"`
				}{got, args}, nil
			}
			return map[string]any{"got": got, "args": args}, nil
		},
	})
}

// TestRawToolFailureCatalog extends the failure catalogue to raw tools: the
// registry does not validate their arguments (invalid JSON reaches the body
// as the raw string, an array as an array), but the lossless snapshot still
// refuses 1e400 and -0 before the body.
func TestRawToolFailureCatalog(t *testing.T) {
	notLossless := outcome{IsError: true, Text: "Error: tool execution arguments must be losslessly JSON-serializable",
		Message: "tool execution arguments must be losslessly JSON-serializable"}
	tests := []struct {
		name   string
		raw    string
		want   outcome
		bodies int
	}{
		{"object", `{"x":0}`, outcome{Text: "map[string]interface {} map[x:0]", Value: `{"args":{"x":0},"got":"map[string]interface {}"}`, Meta: `{"got":"map[string]interface {}"}`, Posted: true}, 1},
		{"invalid JSON reaches the body as the raw string", `{"x":`, outcome{Text: "string {\"x\":", Value: `{"got":"string","args":"{\"x\":"}`, Meta: `{"got":"string"}`, Posted: true}, 1},
		{"a JSON array reaches the body as an array", `[1,"a"]`, outcome{Text: "[]interface {} [1 a]", Value: `{"args":[1,"a"],"got":"[]interface {}"}`, Meta: `{"got":"[]interface {}"}`, Posted: true}, 1},
		{"empty string is {}", ``, outcome{Text: "map[string]interface {} map[]", Value: `{"args":{},"got":"map[string]interface {}"}`, Meta: `{"got":"map[string]interface {}"}`, Posted: true}, 1},
		{"1e400 is refused before the body", `{"x":1e400}`, notLossless, 0},
		{"-0 is refused before the body", `{"x":-0}`, notLossless, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bodies := 0
			reg := core.NewRegistry(nil)
			reg.MustRegister(echoTool(&bodies))
			posted := false
			reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
				posted = true
				return next()
			})
			got := summarize(reg.Execute(context.Background(), core.Call{CallID: "c1", Name: "echo", RawArguments: tt.raw}), posted)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Execute(echo %q) mismatch (-want +got):\n%s", tt.raw, diff)
			}
			if bodies != tt.bodies {
				t.Errorf("body ran %d times, want %d", bodies, tt.bodies)
			}
		})
	}
}

func TestRawToolSchemaIsSentAsIs(t *testing.T) {
	bodies := 0
	got := echoTool(&bodies).Schema()
	want := `{"type":"object","properties":{"x":{"type":"integer","minimum":1}}}`
	if string(got.Parameters) != want {
		t.Errorf("Parameters = %s, want %s (a raw schema, keywords outside the subset included, goes to the model as is)", got.Parameters, want)
	}
	if got.Name != "echo" || got.Description != "echo the arguments" {
		t.Errorf("schema = %+v", got)
	}
}

// TestRawToolRefusedAtRegistration checks dsh's registration texts and that
// a refused tool is unknown to a later call.
func TestRawToolRefusedAtRegistration(t *testing.T) {
	body := func(context.Context, any, *core.Run) (any, error) { return "x", nil }
	render := func(_, v any) (core.Content, error) { return core.Text(fmt.Sprint(v)), nil }
	tests := []struct {
		name     string
		def      core.RawDefinition
		want     string
		wantCode string
	}{
		{
			name: "unsupported output keyword",
			def: core.RawDefinition{Name: "bad", Execute: body,
				Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"string","pattern":"^a"}`), Render: render}},
			want:     "unsupported JSON schema: schema.pattern is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)",
			wantCode: "UNSUPPORTED_SCHEMA",
		},
		{
			name: "missing output",
			def:  core.RawDefinition{Name: "bad", Execute: body},
			want: `tool "bad" must declare output { schema, render, presentationMeta? }`,
		},
		{
			name: "missing render",
			def:  core.RawDefinition{Name: "bad", Execute: body, Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"string"}`)}},
			want: `tool "bad" must declare output { schema, render, presentationMeta? }`,
		},
		{
			name: "negative timeout",
			def: core.RawDefinition{Name: "bad", Execute: body, Timeout: -1,
				Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"string"}`), Render: render}},
			want: `tool "bad" timeoutMs must be a positive finite number`,
		},
		{
			name: "parameters not an object",
			def: core.RawDefinition{Name: "bad", Execute: body, Parameters: json.RawMessage(`[1]`),
				Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"string"}`), Render: render}},
			want: `tool "bad" parameters must be a lossless JSON Schema object`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := core.DefineRaw(tt.def)
			if err == nil {
				t.Fatalf("DefineRaw accepted %s", tt.name)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err, tt.want)
			}
			if tt.wantCode != "" {
				var se *jsonschema.Error
				if !errors.As(err, &se) || core.ErrorCode(err) != tt.wantCode {
					t.Errorf("error %T code %q, want *jsonschema.Error with %s", err, core.ErrorCode(err), tt.wantCode)
				}
			}
			reg := core.NewRegistry(nil)
			if tool != nil {
				t.Fatal("a refused definition returned a tool")
			}
			r := reg.Execute(context.Background(), core.Call{CallID: "c", Name: "bad", RawArguments: `{}`})
			f, ok := r.(*core.Failure)
			if !ok || f.Error.Info == nil || f.Error.Info.Code != core.CodeUnknownTool {
				t.Errorf("a later call of the refused tool = %+v, want UNKNOWN_TOOL", r)
			}
		})
	}
}

// TestRawToolOutputAndPresenters: a raw value is checked against the output
// schema; presenters see parsed arguments and a panic falls back to generic.
func TestRawToolOutputAndPresenters(t *testing.T) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(core.MustDefineRaw(core.RawDefinition{
		Name:   "count",
		Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"integer"}`), Render: func(_, v any) (core.Content, error) { return core.Text(fmt.Sprint(v)), nil }},
		Execute: func(_ context.Context, args any, _ *core.Run) (any, error) {
			if m, ok := args.(map[string]any); ok {
				return m["n"], nil
			}
			return nil, errors.New("arguments must be an object")
		},
		IsConcurrencySafe: func(args any) bool { return args.(map[string]any)["safe"] == true },
		PresentCall: func(args any) core.CallView {
			return &core.GenericCallView{Title: fmt.Sprintf("count %v", args.(map[string]any)["n"])}
		},
	}))
	ok := summarize(reg.Execute(context.Background(), core.Call{Name: "count", RawArguments: `{"n":3}`}), true)
	if ok.IsError || ok.Text != "3" || ok.Value != "3" {
		t.Errorf("count 3 = %+v", ok)
	}
	bad := summarize(reg.Execute(context.Background(), core.Call{Name: "count", RawArguments: `{"n":"x"}`}), true)
	wantBad := `tool "count" returned invalid output: "value" must be an integer`
	if !bad.IsError || bad.Message != wantBad || bad.Info == nil || bad.Info.Code != core.CodeInvalidToolOutput {
		t.Errorf("count \"x\" = %+v, want %s", bad, wantBad)
	}
	if got := reg.ExecutionMode("count", map[string]any{"safe": true}); got != core.Parallel {
		t.Errorf("mode = %v, want parallel", got)
	}
	if got := reg.ExecutionMode("count", "not an object"); got != core.Exclusive {
		t.Errorf("a panicking classifier gave %v, want exclusive", got)
	}
	if v, ok := reg.PresentCall("count", `{"n":3}`).(*core.GenericCallView); !ok || v.Title != "count 3" {
		t.Errorf("PresentCall = %#v", v)
	}
	if v, ok := reg.PresentCall("count", `[1]`).(*core.GenericCallView); !ok || v.Title != "count" {
		t.Errorf("a panicking presenter gave %#v, want the generic view", v)
	}
}
