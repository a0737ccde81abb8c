package agent_test

import (
	"context"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
)

// chunk lines of a scripted step with one text block and n tool calls.
func textAndCalls(n int) []string {
	out := []string{"assistant/chunk block-start:text", "assistant/chunk text-delta"}
	for range n {
		out = append(out, "assistant/chunk block-start:tool-call", "assistant/chunk tool-call-delta")
	}
	for range n + 1 {
		out = append(out, "assistant/chunk block-end")
	}
	return append(out, "assistant/chunk usage", "assistant/chunk finish")
}

func textOnly() []string {
	return []string{"assistant/chunk block-start:text", "assistant/chunk text-delta",
		"assistant/chunk block-end", "assistant/chunk usage", "assistant/chunk finish"}
}

func seq(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch x := p.(type) {
		case string:
			out = append(out, x)
		case []string:
			out = append(out, x...)
		}
	}
	return out
}

// TestOneExclusiveCall is the first sequence of dsh's turn event order.
func TestOneExclusiveCall(t *testing.T) {
	h := newHarness(t, []model.Step{
		{Text: "calling", Calls: []model.ScriptCall{call("c1", "echo", `{"key":"a"}`)}},
		{Text: "done"},
	}, []*core.Tool{echoTool("echo", false, false)}, nil)
	r := h.turn(context.Background(), "hi")
	if r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	evs := h.check()
	expect(t, evs, seq(
		"turn/start", "step/start", "user/message user", "request/header initial", "request/context",
		textAndCalls(1), "assistant/message",
		"tool/call c1", "tool/result c1", "step/end",
		"step/start", textOnly(), "assistant/message", "step/end",
		"turn/end completed")...)

	// assistant/message cites exactly its chunks; tool/result cites its call.
	msgs := find(evs, core.EventAssistantMessage)
	var chunkSeqs []int64
	for _, e := range evs {
		if e.Type == core.EventAssistantChunk && e.Seq < msgs[0].Seq {
			chunkSeqs = append(chunkSeqs, e.Seq)
		}
	}
	if !slices.Equal(msgs[0].SourceEventSeqs, chunkSeqs) {
		t.Errorf("assistant/message sourceEventSeqs = %v, want %v", msgs[0].SourceEventSeqs, chunkSeqs)
	}
	res := find(evs, core.EventToolResult)[0]
	callEv := find(evs, core.EventToolCall)[0]
	if !slices.Equal(res.SourceEventSeqs, []int64{callEv.Seq}) || res.SurfaceOp == nil {
		t.Errorf("tool/result provenance = %v %v", res.SourceEventSeqs, res.SurfaceOp)
	}
	var rd core.ToolResultData
	_ = json.Unmarshal(res.Data, &rd)
	if string(rd.Meta) != `{"key":"a"}` || rd.Turn != 1 || rd.Step != 1 {
		t.Errorf("tool/result data = %s", res.Data)
	}
	var tc core.ToolCall
	_ = json.Unmarshal(callEv.Data, &tc)
	if tc != (core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "echo", Arguments: `{"key":"a"}`}) {
		t.Errorf("tool/call data = %s", callEv.Data)
	}
	got := transcript(h.sess.DeriveMessages())
	want := []string{"user/user text:hi", "assistant/model text:calling call:c1", "user/tool result:c1", "assistant/model text:done"}
	if !slices.Equal(got, want) {
		t.Errorf("transcript = %q\nwant %q", got, want)
	}
	var am core.AssistantMessage
	_ = json.Unmarshal(msgs[0].Data, &am)
	if am.Message.Source.Provider != "scripted" || am.Usage == nil {
		t.Errorf("assistant/message = %s", msgs[0].Data)
	}
}

// TestParallelBatchInterleaves: tool/calls and tool/results interleave in
// the log, results commit in model order, and the derived history pairs
// calls in model order.
func TestParallelBatchInterleaves(t *testing.T) {
	g := newGate()
	h := newHarness(t, []model.Step{
		{Calls: []model.ScriptCall{
			call("c1", "wait", `{"key":"c1"}`),
			call("c2", "wait", `{"key":"c2"}`),
			call("c3", "wait", `{"key":"c3"}`),
		}},
		{Text: "all done"},
	}, []*core.Tool{gatedTool("wait", g, true)}, func(c *agent.Config) { c.MaxParallel = 2 })

	done := make(chan core.TurnEndReason, 1)
	go func() { done <- h.turn(context.Background(), "go") }()
	g.waitStarted(t, "c1")
	g.waitStarted(t, "c2")
	g.open("c1") // c1 commits and frees a slot: c3 starts
	g.waitStarted(t, "c3")
	g.open("c3") // c3 may finish first, but it commits after c2
	g.open("c2")
	if r := <-done; r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	evs := h.check()
	var calls []string
	for _, l := range summary(evs) {
		if strings.HasPrefix(l, "tool/") {
			calls = append(calls, l)
		}
	}
	want := []string{"tool/call c1", "tool/call c2", "tool/result c1", "tool/call c3", "tool/result c2", "tool/result c3"}
	if !slices.Equal(calls, want) {
		t.Errorf("tool events = %q\nwant %q", calls, want)
	}
	got := transcript(h.sess.DeriveMessages())
	wantT := []string{"user/user text:go", "assistant/model call:c1 call:c2 call:c3",
		"user/tool result:c1", "user/tool result:c2", "user/tool result:c3", "assistant/model text:all done"}
	if !slices.Equal(got, wantT) {
		t.Errorf("transcript = %q\nwant %q", got, wantT)
	}
}

// TestExclusiveBarrierAndReclassification: a parallel pool stops before an
// exclusive call, which runs alone after the pool drained.
func TestExclusiveBarrierAndReclassification(t *testing.T) {
	g := newGate()
	h := newHarness(t, []model.Step{
		{Calls: []model.ScriptCall{
			call("p1", "wait", `{"key":"p1"}`),
			call("p2", "wait", `{"key":"p2"}`),
			call("x1", "echo", `{"key":"x1"}`),
			call("p3", "wait", `{"key":"p3"}`),
		}},
		{Text: "ok"},
	}, []*core.Tool{gatedTool("wait", g, true), echoTool("echo", false, false)}, nil)
	done := make(chan core.TurnEndReason, 1)
	go func() { done <- h.turn(context.Background(), "go") }()
	g.waitStarted(t, "p1")
	g.waitStarted(t, "p2")
	g.open("p2")
	g.open("p1")
	g.waitStarted(t, "p3")
	g.open("p3")
	<-done
	evs := h.check()
	var calls []string
	for _, l := range summary(evs) {
		if strings.HasPrefix(l, "tool/") {
			calls = append(calls, l)
		}
	}
	want := []string{"tool/call p1", "tool/call p2", "tool/result p1", "tool/result p2",
		"tool/call x1", "tool/result x1", "tool/call p3", "tool/result p3"}
	if !slices.Equal(calls, want) {
		t.Errorf("tool events = %q\nwant %q", calls, want)
	}
}

// TestAbortBeforeStart: cancelling during an exclusive call drains it
// (ABORTED) and records synthetic pairs for the unstarted calls.
func TestAbortBeforeStart(t *testing.T) {
	g := newGate()
	h := newHarness(t, []model.Step{
		{Calls: []model.ScriptCall{
			call("c1", "wait", `{"key":"c1"}`),
			call("c2", "wait", `{"key":"c2"}`),
			call("c3", "echo", `{"key":"c3"}`),
		}},
		{Text: "never"},
	}, []*core.Tool{gatedTool("wait", g, false), echoTool("echo", false, false)}, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan core.TurnEndReason, 1)
	go func() { done <- h.turn(ctx, "go") }()
	g.waitStarted(t, "c1")
	cancel(agent.Cancel(agent.CauseUser))
	r := <-done
	if r.Kind != core.TurnAborted || r.Reason == nil || r.Reason.Kind != "user" {
		t.Fatalf("reason = %+v", r)
	}
	evs := h.check()
	expect(t, evs, seq(
		"turn/start", "step/start", "user/message user", "request/header initial", "request/context",
		"assistant/chunk block-start:tool-call", "assistant/chunk tool-call-delta",
		"assistant/chunk block-start:tool-call", "assistant/chunk tool-call-delta",
		"assistant/chunk block-start:tool-call", "assistant/chunk tool-call-delta",
		"assistant/chunk block-end", "assistant/chunk block-end", "assistant/chunk block-end",
		"assistant/chunk usage", "assistant/chunk finish", "assistant/message",
		"tool/call c1", "tool/result c1 ABORTED",
		"tool/call c2", "tool/result c2 ABORTED_BEFORE_DISPATCH",
		"tool/call c3", "tool/result c3 ABORTED_BEFORE_DISPATCH",
		"step/end", "turn/end aborted:user")...)
	last := evs[len(evs)-1]
	if string(last.Data) != `{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}` {
		t.Errorf("turn/end = %s", last.Data)
	}
	var rd core.ToolResultData
	_ = json.Unmarshal(find(evs, core.EventToolResult)[1].Data, &rd)
	if rd.Projection().Content.PlainText() != "Error: tool call aborted before dispatch" || !rd.Projection().IsError {
		t.Errorf("synthetic result = %+v", rd)
	}
	// The session stays usable.
	if r := h.turn(context.Background(), "again"); r.Kind != core.TurnCompleted {
		t.Errorf("follow-up = %+v", r)
	}
	h.check()
}

// TestAbortParallelPool: a cancelled pool drains its started calls and
// pairs every unstarted one.
func TestAbortParallelPool(t *testing.T) {
	g := newGate()
	h := newHarness(t, []model.Step{{Calls: []model.ScriptCall{
		call("c1", "wait", `{"key":"c1"}`),
		call("c2", "wait", `{"key":"c2"}`),
		call("c3", "wait", `{"key":"c3"}`),
		call("c4", "echo", `{"key":"c4"}`),
	}}}, []*core.Tool{gatedTool("wait", g, true), echoTool("echo", false, false)},
		func(c *agent.Config) { c.MaxParallel = 2 })
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan core.TurnEndReason, 1)
	go func() { done <- h.turn(ctx, "go") }()
	g.waitStarted(t, "c1")
	g.waitStarted(t, "c2")
	cancel(agent.Cancel(agent.CauseDisposed)) // the pool is full: c3 and c4 never start
	r := <-done
	if r.Kind != core.TurnAborted || r.Reason.Kind != agent.CauseDisposed {
		t.Fatalf("reason = %+v", r)
	}
	var calls []string
	for _, l := range summary(h.check()) {
		if strings.HasPrefix(l, "tool/") {
			calls = append(calls, l)
		}
	}
	want := []string{"tool/call c1", "tool/call c2", "tool/result c1 ABORTED", "tool/result c2 ABORTED",
		"tool/call c3", "tool/result c3 ABORTED_BEFORE_DISPATCH", "tool/call c4", "tool/result c4 ABORTED_BEFORE_DISPATCH"}
	if !slices.Equal(calls, want) {
		t.Errorf("tool events = %q\nwant %q", calls, want)
	}
}

// TestContextArrivesAtNextStep: a post-execute hook's additional context
// becomes a user/message right after the next step/start.
func TestContextArrivesAtNextStep(t *testing.T) {
	h := newHarness(t, []model.Step{
		{Calls: []model.ScriptCall{call("c1", "echo", `{"key":"a"}`), call("c2", "echo", `{"key":"b"}`)}},
		{Text: "noted"},
	}, []*core.Tool{echoTool("echo", false, false)}, nil)
	h.reg.UsePostExecute(func(ctx context.Context, exec *core.Execution, r core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
		d, err := next()
		return d.WithContexts(core.NewContextMessage("ctx-"+exec.CallID, "reminder", "remember "+exec.CallID)), err
	})
	if r := h.turn(context.Background(), "go"); r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	evs := h.check()
	lines := summary(evs)
	i := slices.Index(lines, "step/end")
	want := []string{"step/end", "step/start", "user/message plugin", "user/message plugin", "assistant/chunk block-start:text"}
	if i < 0 || !slices.Equal(lines[i:i+5], want) {
		t.Errorf("around the step boundary: %q", lines[i:])
	}
	got := transcript(h.sess.DeriveMessages())
	wantT := []string{"user/user text:go", "assistant/model call:c1 call:c2", "user/tool result:c1", "user/tool result:c2",
		"user/plugin text:remember c1", "user/plugin text:remember c2", "assistant/model text:noted"}
	if !slices.Equal(got, wantT) {
		t.Errorf("transcript = %q\nwant %q", got, wantT)
	}
}

// TestConcludesTurn: a concluding result ends the turn after its batch.
func TestConcludesTurn(t *testing.T) {
	h := newHarness(t, []model.Step{
		{Calls: []model.ScriptCall{call("c1", "finish", `{"key":"a"}`), call("c2", "echo", `{"key":"b"}`)}},
		{Text: "never played"},
	}, []*core.Tool{echoTool("finish", true, false), echoTool("echo", false, false)}, nil)
	if r := h.turn(context.Background(), "go"); r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	lines := summary(h.check())
	tail := lines[len(lines)-6:]
	want := []string{"tool/call c1", "tool/result c1", "tool/call c2", "tool/result c2", "step/end", "turn/end completed"}
	if !slices.Equal(tail, want) {
		t.Errorf("tail = %q", tail)
	}
	if h.model.Remaining() != 1 {
		t.Errorf("the model was called again after concludesTurn")
	}
}

// TestMaxTokensDropsCalls: a max-tokens finish keeps the text, drops the
// calls, runs no tool and ends the turn with max-tokens.
func TestMaxTokensDropsCalls(t *testing.T) {
	h := newHarness(t, []model.Step{
		{Text: "I was about to", Calls: []model.ScriptCall{call("c1", "echo", `{"key":"a"`)}, Finish: model.FinishMaxTokens},
	}, []*core.Tool{echoTool("echo", false, false)}, nil)
	if r := h.turn(context.Background(), "go"); r.Kind != core.TurnMaxTokens {
		t.Fatalf("reason = %+v", r)
	}
	evs := h.check()
	if len(find(evs, core.EventToolCall)) != 0 {
		t.Error("a tool ran after max-tokens")
	}
	var am core.AssistantMessage
	_ = json.Unmarshal(find(evs, core.EventAssistantMessage)[0].Data, &am)
	if len(am.Message.Content) != 1 || am.Message.Content[0].BlockType() != core.BlockText {
		t.Errorf("assistant message = %s", find(evs, core.EventAssistantMessage)[0].Data)
	}
	lines := summary(evs)
	if lines[len(lines)-1] != "turn/end max-tokens" || lines[len(lines)-2] != "step/end" {
		t.Errorf("tail = %q", lines[len(lines)-3:])
	}
}

// TestModelErrorThenFollowUp: a failing model call ends the turn with
// turn/end{error} and the next message runs normally.
func TestModelErrorThenFollowUp(t *testing.T) {
	fail := core.LLMFailure{Message: "Rate limit reached", Code: model.CodeRateLimit, Status: 429, ProviderRetryAfterMs: 1000}
	h := newHarness(t, []model.Step{
		{Fail: &fail},
		{Text: "partial", Calls: []model.ScriptCall{call("c1", "echo", `{"key":"a"}`)}, Fail: &fail},
		{Text: "back"},
	}, []*core.Tool{echoTool("echo", false, false)}, nil)
	r := h.turn(context.Background(), "one")
	if r.Kind != core.TurnError || r.Error == nil || *r.Error != fail {
		t.Fatalf("reason = %+v", r)
	}
	r = h.turn(context.Background(), "two")
	if r.Kind != core.TurnError {
		t.Fatalf("reason 2 = %+v", r)
	}
	if r := h.turn(context.Background(), "three"); r.Kind != core.TurnCompleted {
		t.Fatalf("reason 3 = %+v", r)
	}
	evs := h.check()
	expect(t, evs, seq(
		"turn/start", "step/start", "user/message user", "request/header initial", "request/context",
		"step/end", "turn/end error:RATE_LIMIT",
		"turn/start", "step/start", "user/message user",
		"assistant/chunk block-start:text", "assistant/chunk text-delta",
		"assistant/chunk block-start:tool-call", "assistant/chunk tool-call-delta",
		"step/end", "turn/end error:RATE_LIMIT",
		"turn/start", "step/start", "user/message user", textOnly(), "assistant/message", "step/end",
		"turn/end completed")...)
	end := find(evs, core.EventTurnEnd)[0]
	if string(end.Data) != `{"turn":1,"reason":{"kind":"error","error":{"message":"Rate limit reached","code":"RATE_LIMIT","status":429,"providerRetryAfterMs":1000}}}` {
		t.Errorf("turn/end = %s", end.Data)
	}
	got := transcript(h.sess.DeriveMessages())
	want := []string{"user/user text:one", "user/user text:two", "user/user text:three", "assistant/model text:back"}
	if !slices.Equal(got, want) {
		t.Errorf("transcript = %q", got)
	}
}

// TestCancelDuringStream keeps the streamed text as an interrupted
// assistant message and runs no tool.
//
// It runs in a synctest bubble: the deltas come 1ms apart on the fake
// clock, so the cancel always lands while the stream still has most of
// its 50 deltas to send.
func TestCancelDuringStream(t *testing.T) {
	synctest.Test(t, testCancelDuringStream)
}

func testCancelDuringStream(t *testing.T) {
	h := newHarness(t, []model.Step{
		{Reasoning: "hmm", Text: strings.Repeat("word ", 50), Calls: []model.ScriptCall{call("c1", "echo", `{"key":"a"}`)}},
	}, []*core.Tool{echoTool("echo", false, false)}, nil)
	h.model = model.NewScripted(model.ScriptedConfig{
		Script: model.Script{Steps: []model.Step{{Reasoning: "hmm", Text: strings.Repeat("word ", 50),
			Calls: []model.ScriptCall{call("c1", "echo", `{"key":"a"}`)}}}},
		Pacing: model.Pacing{PerChunk: time.Millisecond, TextPiece: 5},
	})
	a, err := agent.New(agent.Config{Session: h.sess, Tools: h.reg, Model: h.model, ChunkBytes: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	remove := h.sess.OnAppend(func(e core.Event) {
		if e.Type == core.EventAssistantChunk && strings.Contains(string(e.Data), `"text-delta"`) && e.Seq > 12 {
			cancel(agent.Cancel(agent.CauseUser))
		}
	})
	defer remove()
	r, err := a.Turn(ctx, core.NewUserMessage("u", "go"))
	if err != nil || r.Kind != core.TurnAborted {
		t.Fatalf("reason = %+v, %v", r, err)
	}
	evs := h.check()
	if len(find(evs, core.EventToolCall)) != 0 {
		t.Error("a call ran after the cancelled stream")
	}
	ams := find(evs, core.EventAssistantMessage)
	if len(ams) != 1 {
		t.Fatalf("assistant messages = %d", len(ams))
	}
	var am core.AssistantMessage
	_ = json.Unmarshal(ams[0].Data, &am)
	if !am.Interrupted || len(am.Message.Content) != 2 || am.Message.Content[0].BlockType() != core.BlockReasoning ||
		!strings.HasPrefix(am.Message.Content[1].(*core.TextBlock).Text, "word") {
		t.Errorf("interrupted message = %s", ams[0].Data)
	}
	lines := summary(evs)
	if lines[len(lines)-1] != "turn/end aborted:user" {
		t.Errorf("tail = %q", lines[len(lines)-3:])
	}
}

// TestToolOwnedEvents land between tool/call and tool/result.
func TestToolOwnedEvents(t *testing.T) {
	h := newHarness(t, []model.Step{{Calls: []model.ScriptCall{call("c1", "todo", `{"key":"write tests"}`)}}, {Text: "ok"}},
		[]*core.Tool{echoTool("todo", false, true)}, nil)
	h.turn(context.Background(), "go")
	lines := summary(h.check())
	i := slices.Index(lines, "tool/call c1")
	if i < 0 || !slices.Equal(lines[i:i+3], []string{"tool/call c1", "todo/write", "tool/result c1"}) {
		t.Errorf("events = %q", lines)
	}
}

// TestFailureClasses runs calls every failure class of the pipeline.
func TestFailureClasses(t *testing.T) {
	h := newHarness(t, []model.Step{{Calls: []model.ScriptCall{
		call("bad-json", "echo", `{"key": "a"`),
		call("unknown", "nope", `{}`),
		call("schema", "echo", `{"key": 42}`),
	}}, {Text: "ok"}}, []*core.Tool{echoTool("echo", false, false)}, nil)
	h.turn(context.Background(), "go")
	var results []string
	for _, l := range summary(h.check()) {
		if strings.HasPrefix(l, "tool/result") {
			results = append(results, l)
		}
	}
	want := []string{"tool/result bad-json INVALID_ARGS", "tool/result unknown UNKNOWN_TOOL", "tool/result schema INVALID_ARGS"}
	if !slices.Equal(results, want) {
		t.Errorf("results = %q", results)
	}
}

// TestMaxSteps stops a turn that keeps calling tools.
func TestMaxSteps(t *testing.T) {
	step := model.Step{Calls: []model.ScriptCall{{Name: "echo", Arguments: `{"key":"a"}`}}}
	h := newHarness(t, []model.Step{step, step, step}, []*core.Tool{echoTool("echo", false, false)},
		func(c *agent.Config) { c.MaxSteps = 2 })
	r := h.turn(context.Background(), "go")
	if r.Kind != core.TurnError || r.Error.Code != agent.CodeMaxSteps {
		t.Fatalf("reason = %+v", r)
	}
	if n := len(find(h.check(), core.EventStepStart)); n != 2 {
		t.Errorf("steps = %d", n)
	}
}

// TestStoreFailureEndsTurn: a log failure stops the turn, waits for
// in-flight calls and reports the error.
func TestStoreFailureEndsTurn(t *testing.T) {
	g := newGate()
	h := newHarness(t, []model.Step{{Calls: []model.ScriptCall{
		call("c1", "wait", `{"key":"c1"}`), call("c2", "wait", `{"key":"c2"}`),
	}}}, []*core.Tool{gatedTool("wait", g, true)}, nil)
	done := make(chan error, 1)
	go func() {
		_, err := h.agent.Turn(context.Background(), core.NewUserMessage("u", "go"))
		done <- err
	}()
	g.waitStarted(t, "c1")
	g.waitStarted(t, "c2")
	h.store.mu.Lock()
	h.store.failAt = h.store.calls + 1
	h.store.mu.Unlock()
	g.open("c1")
	g.open("c2")
	if err := <-done; err == nil || core.ErrorCode(err) != core.CodeUnavailable {
		t.Fatalf("err = %v", err)
	}
	// The log stops at the last durable event: no partial commit.
	if got, stored := len(h.sess.Events()), len(h.store.log(h.sess.Header().ID)); got != stored {
		t.Errorf("session %d events, store %d", got, stored)
	}
}

// TestChunkCoalescing merges consecutive deltas of one block, bounded by
// size, and never changes what assembles.
func TestChunkCoalescing(t *testing.T) {
	text := strings.Repeat("abcdefghij", 40) // 400 bytes in 10-byte pieces
	args := `{"key":"` + strings.Repeat("x", 90) + `"}`
	for _, tc := range []struct {
		name   string
		bytes  int
		deltas int
	}{
		{"merged", 1 << 20, 2},
		{"size-bounded", 100, 4 + 1},
		{"unbuffered", -1, 20 + 10}, // text without spaces is cut at 2×TextPiece
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, []*core.Tool{echoTool("echo", false, false)}, nil)
			m := model.NewScripted(model.ScriptedConfig{
				Script: model.Script{Steps: []model.Step{{Text: text, Calls: []model.ScriptCall{call("c1", "echo", args)}}, {Text: "ok"}}},
				Pacing: model.Pacing{TextPiece: 10, ArgsPiece: 10},
			})
			a, err := agent.New(agent.Config{Session: h.sess, Tools: h.reg, Model: m, ChunkInterval: time.Hour, ChunkBytes: tc.bytes, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Turn(context.Background(), core.NewUserMessage("u", "go")); err != nil {
				t.Fatal(err)
			}
			evs := h.check()
			var asm model.Assembler
			deltas := 0
			for _, e := range evs {
				if e.Type != core.EventAssistantChunk {
					continue
				}
				var d core.AssistantChunk
				_ = json.Unmarshal(e.Data, &d)
				if d.Step != 1 {
					continue
				}
				if d.Chunk.Type == core.ChunkTextDelta || d.Chunk.Type == core.ChunkToolCallDelta {
					deltas++
				}
				if d.Chunk.Type != core.ChunkBlockEnd { // assemble from deltas alone
					asm.Push(d.Chunk)
				}
			}
			if deltas != tc.deltas {
				t.Errorf("delta events = %d, want %d", deltas, tc.deltas)
			}
			blocks, _ := asm.Blocks()
			if len(blocks) != 2 || blocks[0].(*core.TextBlock).Text != text || blocks[1].(*core.ToolCallBlock).Arguments != args {
				t.Errorf("assembled = %v", blocks)
			}
		})
	}
}

// TestChunkFlushInterval appends a pending delta once it is old enough,
// even while the stream is silent. It runs in a synctest bubble: the model
// paces its deltas 50ms apart on the fake clock, so the 1ms flush always
// comes between two of them, however loaded the machine.
func TestChunkFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, nil, nil)
		m := model.NewScripted(model.ScriptedConfig{
			Script: model.Script{Steps: []model.Step{{Text: "one two three four"}}},
			Pacing: model.Pacing{PerChunk: 50 * time.Millisecond, TextPiece: 3},
		})
		a, err := agent.New(agent.Config{Session: h.sess, Tools: h.reg, Model: m, ChunkInterval: time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Turn(context.Background(), core.NewUserMessage("u", "go")); err != nil {
			t.Fatal(err)
		}
		deltas := 0
		for _, l := range summary(h.check()) {
			if l == "assistant/chunk text-delta" {
				deltas++
			}
		}
		if deltas != 4 {
			t.Errorf("text-delta events = %d, want one per slow delta (4)", deltas)
		}
	})
}

// TestRequestHeaderChange logs request/header again only when it changed.
func TestRequestHeaderChange(t *testing.T) {
	h := newHarness(t, []model.Step{{Text: "a"}, {Text: "b"}, {Text: "c"}}, []*core.Tool{echoTool("echo", false, false)}, nil)
	h.turn(context.Background(), "1")
	h.turn(context.Background(), "2")
	h.reg.MustRegister(echoTool("late", false, false))
	h.turn(context.Background(), "3")
	var reasons []string
	for _, l := range summary(h.check()) {
		if strings.HasPrefix(l, "request/") {
			reasons = append(reasons, l)
		}
	}
	if !slices.Equal(reasons, []string{"request/header initial", "request/context", "request/header change"}) {
		t.Errorf("request events = %q", reasons)
	}
	// A new agent over the same log resumes.
	a2, err := agent.New(agent.Config{Session: h.sess, Tools: h.reg, Model: model.NewScripted(model.ScriptedConfig{}), System: "test system", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Turn(context.Background(), core.NewUserMessage("u", "4")); err != nil {
		t.Fatal(err)
	}
	lines := summary(h.check())
	if !slices.Contains(lines, "request/header resume") {
		t.Errorf("no resume header: %q", lines)
	}
	var ts core.TurnStart
	_ = json.Unmarshal(find(h.sess.Events(), core.EventTurnStart)[3].Data, &ts)
	if ts.Turn != 4 {
		t.Errorf("turn numbering did not continue: %d", ts.Turn)
	}
}

// TestCancelledBeforeFirstStep: a turn cancelled before it starts a step
// opens and closes without a step, and the next turn runs normally.
func TestCancelledBeforeFirstStep(t *testing.T) {
	h := newHarness(t, []model.Step{{Text: "hello"}}, nil, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(agent.Cancel(agent.CauseParent))
	if r := h.turn(ctx, "never sent"); r.Kind != core.TurnAborted || r.Reason.Kind != agent.CauseParent {
		t.Fatalf("reason = %+v", r)
	}
	if r := h.turn(context.Background(), "hi"); r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	expect(t, h.check(), seq("turn/start", "turn/end aborted:parent",
		"turn/start", "step/start", "user/message user", "request/header initial", "request/context",
		textOnly(), "assistant/message", "step/end", "turn/end completed")...)
}

// TestDurabilityPoints: no tool body runs before its tool/call is
// committed; the calls a step starts together share one commit; and a turn
// returns only once its whole log is committed.
func TestDurabilityPoints(t *testing.T) {
	var h *harness
	var mu sync.Mutex
	var bodies []string
	probe := func(name string, parallel bool) *core.Tool {
		d := core.Definition[keyArgs, keyValue]{
			Name:       name,
			Parameters: `{"key": {"type": "string", "required": true}}`,
			Output: core.Output[keyArgs, keyValue]{
				Schema: `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "required": true}}}`,
				Render: func(_ keyArgs, v keyValue) (core.Content, error) { return core.Text(v.Key), nil },
			},
			Execute: func(_ context.Context, a keyArgs, _ *core.Run) (keyValue, error) {
				logged := false
				for _, e := range h.store.log(h.sess.Header().ID) {
					var d core.ToolCall
					if e.Type == core.EventToolCall && json.Unmarshal(e.Data, &d) == nil && d.CallID == a.Key {
						logged = true
					}
				}
				if !logged {
					t.Errorf("the body of %s ran before its tool/call was committed", a.Key)
				}
				mu.Lock()
				bodies = append(bodies, a.Key)
				mu.Unlock()
				return keyValue(a), nil
			},
		}
		if parallel {
			d.IsConcurrencySafe = func(keyArgs) bool { return true }
		}
		return core.MustDefine(d)
	}
	h = newHarness(t, []model.Step{
		{Text: "three at once", Calls: []model.ScriptCall{
			call("p1", "par", `{"key":"p1"}`), call("p2", "par", `{"key":"p2"}`), call("p3", "par", `{"key":"p3"}`)}},
		{Calls: []model.ScriptCall{call("x1", "excl", `{"key":"x1"}`)}},
		{Text: "done"},
	}, []*core.Tool{probe("par", true), probe("excl", false)}, nil)
	if r := h.turn(context.Background(), "go"); r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	// Turn returned: everything is committed.
	if d, n := h.sess.Durable(), h.sess.NextSeq(); d != n {
		t.Errorf("after the turn %d of %d events are durable", d, n)
	}
	evs := h.check()
	calls := find(evs, core.EventToolCall)
	if len(calls) != 4 || len(bodies) != 4 {
		t.Fatalf("%d tool/calls and %d bodies, want 4 and 4", len(calls), len(bodies))
	}
	if b := h.store.batchOf(calls[0].Seq); b < 0 || h.store.batchOf(calls[1].Seq) != b || h.store.batchOf(calls[2].Seq) != b {
		t.Errorf("the three parallel calls were committed by AppendEvents calls %d, %d, %d; want one",
			b, h.store.batchOf(calls[1].Seq), h.store.batchOf(calls[2].Seq))
	}
	// Far fewer commits than events: results, chunks and bookkeeping ride
	// along with the durability points.
	h.store.mu.Lock()
	commits := len(h.store.batches)
	h.store.mu.Unlock()
	if commits >= len(evs)/2 {
		t.Errorf("%d commits for %d events", commits, len(evs))
	}
}

// heldModel is a model whose calls wait for release before they start.
type heldModel struct {
	model.Model
	release chan struct{}
}

func (m heldModel) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	select {
	case <-m.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.Model.Stream(ctx, req)
}

// TestPromptCommittedWhileTheModelThinks: a turn's user message is a
// durability point — whoever sent it waits for its commit (the runner
// acknowledges a session only then) — so it is committed while the model
// is still being asked, even where appends would otherwise wait an hour.
func TestPromptCommittedWhileTheModelThinks(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	sess, err := core.NewSession(ctx, core.SessionHeader{Cwd: t.TempDir()},
		core.SessionOptions{Store: store, Logger: quiet, FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	committed := make(chan core.Event, 64)
	sess.OnAppend(func(e core.Event) { committed <- e })
	m := heldModel{Model: model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: []model.Step{{Text: "hello"}}}}),
		release: make(chan struct{})}
	a, err := agent.New(agent.Config{Session: sess, Tools: core.NewRegistry(quiet), Model: m, System: "test system", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Turn(ctx, core.NewUserMessage(core.NewID(), "remember me"))
		done <- err
	}()
	timeout := time.After(10 * time.Second)
	for prompt := false; !prompt; {
		select {
		case e := <-committed:
			prompt = e.Type == core.EventUserMessage
		case err := <-done:
			t.Fatalf("the turn ended (%v) while the model was held", err)
		case <-timeout:
			t.Fatal("the prompt was not committed within 10s while the model was asked")
		}
	}
	if got := find(store.log(sess.Header().ID), core.EventUserMessage); len(got) != 1 {
		t.Errorf("the store holds %d user messages while the model is asked, want the prompt", len(got))
	}
	close(m.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLoneCallRunsOnTheLoop: a step's only call runs its body on the
// loop's own goroutine once its tool/call is committed (no dispatch
// goroutine to hand it to and back), while the calls of a parallel pool
// still each get a goroutine of their own.
func TestLoneCallRunsOnTheLoop(t *testing.T) {
	var h *harness
	var mu sync.Mutex
	onLoop := map[string]bool{}
	probe := core.MustDefine(core.Definition[keyArgs, keyValue]{
		Name:       "probe",
		Parameters: `{"key": {"type": "string", "required": true}}`,
		Output: core.Output[keyArgs, keyValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "required": true}}}`,
			Render: func(_ keyArgs, v keyValue) (core.Content, error) { return core.Text(v.Key), nil },
		},
		Execute: func(_ context.Context, a keyArgs, _ *core.Run) (keyValue, error) {
			if h.sess.Durable() < h.sess.NextSeq()-1 {
				// Only what the body itself may log can be pending.
				t.Errorf("the body of %s ran with %d of %d events durable", a.Key, h.sess.Durable(), h.sess.NextSeq())
			}
			buf := make([]byte, 64<<10)
			stack := string(buf[:runtime.Stack(buf, false)])
			mu.Lock()
			onLoop[a.Key] = strings.Contains(stack, "agent.(*Agent).Turn")
			mu.Unlock()
			return keyValue(a), nil
		},
		IsConcurrencySafe: func(keyArgs) bool { return true },
	})
	h = newHarness(t, []model.Step{
		{Calls: []model.ScriptCall{call("lone", "probe", `{"key":"lone"}`)}},
		{Calls: []model.ScriptCall{call("p1", "probe", `{"key":"p1"}`), call("p2", "probe", `{"key":"p2"}`)}},
		{Text: "done"},
	}, []*core.Tool{probe}, nil)
	if r := h.turn(context.Background(), "go"); r.Kind != core.TurnCompleted {
		t.Fatalf("reason = %+v", r)
	}
	want := map[string]bool{"lone": true, "p1": false, "p2": false}
	if !maps.Equal(onLoop, want) {
		t.Errorf("bodies run on the loop's goroutine: %v, want %v", onLoop, want)
	}
}
