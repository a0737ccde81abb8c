package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"prism/core"
)

// ExampleDefine defines a typed tool, registers it and runs one call: the
// body returns only its value; Render makes the model's content of it and
// the result's projection is what the log keeps.
func ExampleDefine() {
	type args struct {
		Name string `json:"name"`
	}
	type greeting struct {
		Text string `json:"text"`
	}
	greet, err := core.Define(core.Definition[args, greeting]{
		Name:        "greet",
		Description: "Greets someone.",
		Parameters:  `{"name": {"type": "string", "required": true}}`,
		Output: core.Output[args, greeting]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {"text": {"type": "string", "required": true}}}`,
			Render: func(_ args, v greeting) (core.Content, error) { return core.Text(v.Text), nil },
		},
		Execute: func(_ context.Context, a args, _ *core.Run) (greeting, error) {
			return greeting{Text: "Hello, " + a.Name + "!"}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(greet)

	ok := reg.Execute(context.Background(), core.Call{CallID: "c1", Name: "greet", RawArguments: `{"name":"Ada"}`})
	content, _ := json.Marshal(ok.Projection().Content)
	fmt.Println(ok.IsError(), string(content))

	bad := reg.Execute(context.Background(), core.Call{CallID: "c2", Name: "greet", RawArguments: `{}`})
	content, _ = json.Marshal(bad.Projection().Content)
	fmt.Println(bad.IsError(), string(content))
	// Output:
	// false [{"type":"text","text":"Hello, Ada!"}]
	// true [{"type":"text","text":"Error: invalid arguments: missing required property \"name\""}]
}

// ExampleDefineRaw defines a tool the way MCP tools are registered: a JSON
// Schema the model sees as is, and the arguments as a generic JSON tree.
func ExampleDefineRaw() {
	upper := core.MustDefineRaw(core.RawDefinition{
		Name:       "upper",
		Parameters: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`),
		Output: &core.RawOutput{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_, value any) (core.Content, error) { return core.Text(value.(string)), nil },
		},
		Execute: func(_ context.Context, args any, _ *core.Run) (any, error) {
			s, _ := args.(map[string]any)["s"].(string)
			return strings.ToUpper(s), nil
		},
	})
	reg := core.NewRegistry(nil)
	reg.MustRegister(upper)
	res := reg.Execute(context.Background(), core.Call{CallID: "c1", Name: "upper", RawArguments: `{"s":"quiet"}`})
	content, _ := json.Marshal(res.Projection().Content)
	fmt.Println(string(content))
	// Output:
	// [{"type":"text","text":"QUIET"}]
}

// ExampleRegistry_UsePostExecute rewrites what the model receives after a
// call ran: the value stays, the content is replaced.
func ExampleRegistry_UsePostExecute() {
	reg := core.NewRegistry(nil)
	reg.MustRegister(core.MustDefineRaw(core.RawDefinition{
		Name: "secret",
		Output: &core.RawOutput{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_, value any) (core.Content, error) { return core.Text(value.(string)), nil },
		},
		Execute: func(context.Context, any, *core.Run) (any, error) { return "the password is hunter2", nil },
	}))
	reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, _ func() (core.PostDecision, error)) (core.PostDecision, error) {
		return core.ReplaceContent(core.Text("[redacted]")), nil
	})
	res := reg.Execute(context.Background(), core.Call{CallID: "c1", Name: "secret", RawArguments: `{}`})
	content, _ := json.Marshal(res.Projection().Content)
	fmt.Println(string(content))
	// Output:
	// [{"type":"text","text":"[redacted]"}]
}

// ExampleNewSession appends a turn to an in-memory session (no store) and
// reads it back: the events with their seqs, and the session's summary.
func ExampleNewSession() {
	ctx := context.Background()
	sess, err := core.NewSession(ctx, core.SessionHeader{ID: "s1"}, core.SessionOptions{})
	if err != nil {
		panic(err)
	}
	for _, d := range []core.Draft{
		{Type: core.EventTurnStart, Data: core.TurnStart{Turn: 0}},
		{Type: core.EventToolCall, Data: core.ToolCall{Turn: 0, Step: 0, CallID: "c1", Name: "greet", Arguments: `{"name":"Ada"}`}},
	} {
		if _, err := sess.AppendMany(ctx, d); err != nil {
			panic(err)
		}
	}
	if err := sess.Sync(ctx); err != nil {
		panic(err)
	}
	for _, e := range sess.Events() {
		fmt.Println(e.Seq, e.Type)
	}
	fmt.Println("tool calls:", core.Summarize(sess.Events()).Calls)
	// Output:
	// 0 turn/start
	// 1 tool/call
	// tool calls: 1
}
