package core_test

import (
	"context"
	"encoding/json"
	"fmt"

	"prism/core"
)

// printResult prints a result the way the seed demo does: the observed
// tools/result events, then the execution-local result.
func printResult(events []string, r core.Result) {
	ev, _ := core.MarshalNoEscape(events)
	body, err := core.MarshalNoEscape(r)
	if err != nil {
		panic(err)
	}
	fmt.Printf("{\"events\":%s,%s\n", ev, body[1:])
}

// seedRegistry returns a registry with the note tool and an observer that
// records "result:success" / "result:error" like the seed.
func seedRegistry(events *[]string) *core.Registry {
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(nil))
	reg.OnResult(func(_ *core.Execution, r core.Result) {
		if r.IsError() {
			*events = append(*events, "result:error")
		} else {
			*events = append(*events, "result:success")
		}
	})
	return reg
}

// Example_seed reproduces sections A and B of DeepSeek Harness's
// result-projection demo: one tool value, many projections, and the
// post-execute decisions that rewrite them.
func Example_seed() {
	ctx := context.Background()
	call := core.Call{CallID: "b4-call", Name: "note", RawArguments: `{"title":"Demo"}`}

	fmt.Println("=== A: execution-local result (tools/result) ===")
	var events []string
	reg := seedRegistry(&events)
	res := reg.Execute(ctx, call)
	printResult(events, res)

	fmt.Println("=== A: UI views (pure projections) ===")
	views, _ := core.MarshalNoEscape(struct {
		CallView   core.CallView   `json:"callView"`
		ResultView core.ResultView `json:"resultView"`
	}{reg.PresentCall("note", call.RawArguments), reg.PresentResult("note", call.RawArguments, res.Projection())})
	fmt.Println(string(views))

	scenarios := []struct {
		title string
		pre   core.PreExecuteHook
		post  core.PostExecuteHook
	}{
		{title: "B1: accept content replace", post: func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
			return core.ReplaceContent(core.Text("redacted summary")), nil
		}},
		{title: "B2: accept value replace", post: func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
			return core.ReplaceValue(note{Title: "Replaced", Lines: []string{"x"}}), nil
		}},
		{title: "B3: block with feedback", post: func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
			return core.Block(core.Text("blocked by result policy")), nil
		}},
		{
			title: "B4: value replace on failed result",
			pre: func(context.Context, *core.Execution, func() (core.PreDecision, error)) (core.PreDecision, error) {
				return core.Deny("notes are read-only today"), nil
			},
			post: func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
				return core.ReplaceValue(note{Title: "Replaced", Lines: []string{}}), nil
			},
		},
	}
	for _, sc := range scenarios {
		fmt.Printf("=== %s ===\n", sc.title)
		var events []string
		reg := seedRegistry(&events)
		if sc.pre != nil {
			reg.UsePreExecute(sc.pre)
		}
		reg.UsePostExecute(sc.post)
		printResult(events, reg.Execute(ctx, call))
	}

	fmt.Println("=== C: durable session log (events) ===")
	sess, err := core.NewSession(ctx, core.SessionHeader{ID: "seed-session"}, core.SessionOptions{})
	if err != nil {
		panic(err)
	}
	logged := core.Call{CallID: "b4-logged-call", Name: "note", RawArguments: `{"title":"Demo"}`}
	mustAppend := func(typ string, data any, opts core.AppendOptions) core.Event {
		e, err := sess.Append(ctx, typ, data, opts)
		if err != nil {
			panic(err)
		}
		return e
	}
	mustAppend(core.EventTurnStart, core.TurnStart{Turn: 0}, core.AppendOptions{})
	callEvent := mustAppend(core.EventToolCall, core.ToolCall{Turn: 0, Step: 0, CallID: logged.CallID,
		Name: logged.Name, Arguments: logged.RawArguments}, core.AppendOptions{})
	final := seedRegistry(new([]string)).Execute(ctx, logged)
	var resultErr *core.ErrorInfo
	if f, ok := final.(*core.Failure); ok {
		resultErr = f.Error.Info
	}
	proj := final.Projection()
	mustAppend(core.EventToolResult, core.ToolResultData{
		Turn: 0, Step: 0,
		Message: core.NewToolResultMessage("b4-logged-result", logged.CallID, proj.Content, proj.IsError),
		Error:   resultErr,
		Meta:    proj.Meta,
	}, core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{callEvent.Seq}})
	for _, e := range sess.Events() {
		fmt.Printf("{\"type\":%q,\"seq\":%d,\"data\":%s}\n", e.Type, e.Seq, e.Data)
	}

	fmt.Println("=== C: checks ===")
	log := sess.Events()
	var callData map[string]any
	var resultData map[string]json.RawMessage
	_ = json.Unmarshal(log[1].Data, &callData)
	_ = json.Unmarshal(log[2].Data, &resultData)
	_, argsIsString := callData["arguments"].(string)
	_, hasValue := resultData["value"]
	transcript := sess.DeriveMessages()
	noToolCall := true
	type roleSource struct {
		Role   string      `json:"role"`
		Source core.Source `json:"source"`
	}
	var roles []roleSource
	for _, m := range transcript {
		for _, b := range m.Content {
			if _, isCall := b.(*core.ToolCallBlock); isCall {
				noToolCall = false
			}
		}
		roles = append(roles, roleSource{m.Role, m.Source})
	}
	checks, _ := core.MarshalNoEscape(struct {
		CallArgsIsRawString     bool         `json:"callArgsIsRawString"`
		ResultHasNoValueField   bool         `json:"resultHasNoValueField"`
		TranscriptHasNoToolCall bool         `json:"transcriptHasNoToolCall"`
		TranscriptRoleAndSource []roleSource `json:"transcriptRoleAndSource"`
	}{argsIsString, !hasValue, noToolCall, roles})
	fmt.Println(string(checks))

	// Output:
	// === A: execution-local result (tools/result) ===
	// {"events":["result:success"],"isError":false,"value":{"title":"Demo","lines":["line one","line two"]},"content":[{"type":"text","text":"# Demo\n- line one\n- line two"}],"meta":{"lineCount":2,"title":"Demo"}}
	// === A: UI views (pure projections) ===
	// {"callView":{"card":"generic","title":"Read note Demo","kind":"read"},"resultView":{"card":"generic","title":"Note completed","content":[{"type":"text","text":"# Demo\n- line one\n- line two"}]}}
	// === B1: accept content replace ===
	// {"events":["result:success"],"isError":false,"value":{"title":"Demo","lines":["line one","line two"]},"content":[{"type":"text","text":"redacted summary"}],"meta":{"lineCount":2,"title":"Demo"}}
	// === B2: accept value replace ===
	// {"events":["result:success"],"isError":false,"value":{"title":"Replaced","lines":["x"]},"content":[{"type":"text","text":"# Replaced\n- x"}],"meta":{"lineCount":1,"title":"Replaced"}}
	// === B3: block with feedback ===
	// {"events":["result:error"],"isError":true,"content":[{"type":"text","text":"blocked by result policy"}],"error":{"message":"blocked by result policy"}}
	// === B4: value replace on failed result ===
	// {"events":["result:error"],"isError":true,"content":[{"type":"text","text":"Error: tools/post-execute cannot replace the value of a failed result"}],"error":{"message":"tools/post-execute cannot replace the value of a failed result"}}
	// === C: durable session log (events) ===
	// {"type":"turn/start","seq":0,"data":{"turn":0}}
	// {"type":"tool/call","seq":1,"data":{"turn":0,"step":0,"callId":"b4-logged-call","name":"note","arguments":"{\"title\":\"Demo\"}"}}
	// {"type":"tool/result","seq":2,"data":{"turn":0,"step":0,"message":{"id":"b4-logged-result","role":"user","content":[{"type":"tool-result","toolCallId":"b4-logged-call","content":[{"type":"text","text":"# Demo\n- line one\n- line two"}],"isError":false}],"source":{"kind":"tool","callId":"b4-logged-call"}},"meta":{"lineCount":2,"title":"Demo"}}}
	// === C: checks ===
	// {"callArgsIsRawString":true,"resultHasNoValueField":true,"transcriptHasNoToolCall":true,"transcriptRoleAndSource":[{"role":"user","source":{"kind":"tool","callId":"b4-logged-call"}}]}
}
