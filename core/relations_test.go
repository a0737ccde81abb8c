package core_test

import (
	"testing"

	"prism/core"
)

func TestCheckRelationsAcceptsCanonicalSequences(t *testing.T) {
	log := []core.Event{
		sev(0, core.EventUserMessage, userMsg("u0", "before any turn")),
		ev(1, core.EventTurnStart, turnStart(1)),
		ev(2, core.EventStepStart, stepData(1, 1)),
		ev(3, core.EventRequestHeader, `{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}`),
		ev(4, core.EventAssistantChunk, `{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}`),
		sev(5, core.EventAssistantMessage, assistantMsg(1, 1, "a1", callBlock("c1", "run_code", "{}"), callBlock("c2", "read", "{}"), callBlock("c3", "read", "{}")), 4),
		ev(6, core.EventToolCall, toolCall(1, 1, "c1", "run_code", "{}")),
		ev(7, core.EventCodeDispatchOpen, `{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1","name":"read","arguments":{}}`),
		ev(8, core.EventCodeDispatch, `{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1","name":"read","arguments":{},"isError":false,"content":[]}`),
		ev(9, core.EventCodeDispatchOpen, `{"rootCallId":"c1","parentCallId":"c1:code:1","subCallId":"c1:code:1:code:1","name":"read","arguments":{}}`),
		ev(10, core.EventToolCall, toolCall(1, 1, "c2", "read", "{}")),
		ev(11, core.EventTodoWrite, `{"todos":[]}`),
		sev(12, core.EventToolResult, toolResult(1, 1, "r1", "c1", "ok", false, ""), 6),
		sev(13, core.EventToolResult, toolResult(1, 1, "r2", "c2", "ok", false, ""), 10),
		// The synthetic not-started result needs no tool/call.
		sev(14, core.EventToolResult, toolResult(1, 1, "r3", "c3", "x", true, `,"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}`)),
		ev(15, core.EventStepEnd, stepData(1, 1)),
		// A rewrite needs only an open turn.
		rev(16, core.EventToolResult, toolResult(1, 1, "r1", "c1", "o", false, ""), 12, 12, 12),
		ev(17, core.EventStepStart, stepData(1, 2)),
		ev(18, core.EventStepEnd, stepData(1, 2)),
		ev(19, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
		ev(20, core.EventSessionEndSeed, `{}`),
		ev(21, "approval/policy", `{"policy":"ask"}`),
		ev(22, core.EventTurnStart, turnStart(2)),
		ev(23, core.EventStepStart, stepData(2, 1)),
	}
	if err := core.CheckRelations(log); err != nil {
		t.Fatalf("CheckRelations: %v", err)
	}
}

func TestCheckRelationsViolations(t *testing.T) {
	turn1 := []core.Event{
		ev(0, core.EventTurnStart, turnStart(1)),
		ev(1, core.EventStepStart, stepData(1, 1)),
	}
	with := func(evs ...core.Event) []core.Event { return append(clone(turn1), evs...) }
	cases := []struct {
		name string
		log  []core.Event
		msg  string
	}{
		{"seq not increasing", with(ev(1, core.EventStepEnd, stepData(1, 1))),
			`seq 1: seq must strictly increase: saw 1 after 1`},
		{"first turn is not 1", []core.Event{ev(0, core.EventTurnStart, turnStart(0))},
			`seq 0: turn/start expected turn 1, got 0`},
		{"turn skips a number", []core.Event{
			ev(0, core.EventTurnStart, turnStart(1)),
			ev(1, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
			ev(2, core.EventTurnStart, turnStart(3)),
		}, `seq 2: turn/start expected turn 2, got 3`},
		{"turn/start while a turn is open", []core.Event{
			ev(0, core.EventTurnStart, turnStart(1)),
			ev(1, core.EventTurnStart, turnStart(2)),
		}, `seq 1: turn/start 2 while turn 1 is still open`},
		{"turn/end of another turn", []core.Event{
			ev(0, core.EventTurnStart, turnStart(1)),
			ev(1, core.EventTurnEnd, `{"turn":2,"reason":{"kind":"completed"}}`),
		}, `seq 1: turn/end 2 does not match open turn 1`},
		{"turn/end with no turn open", []core.Event{
			ev(0, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
		}, `seq 0: turn/end 1 does not match open turn null`},
		{"turn/end with a step open", with(ev(2, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)),
			`seq 2: turn/end 1 while step 1 is still open`},
		{"step/start without a turn", []core.Event{ev(0, core.EventStepStart, stepData(1, 1))},
			`seq 0: step/start in turn 1 but open turn is null`},
		{"step/start while a step is open", with(ev(2, core.EventStepStart, stepData(1, 2))),
			`seq 2: step/start 2 while step 1 is still open`},
		{"step skips a number", with(ev(2, core.EventStepEnd, stepData(1, 1)), ev(3, core.EventStepStart, stepData(1, 3))),
			`seq 3: step/start expected step 2 in turn 1, got 3`},
		{"steps restart at 1 each turn", []core.Event{
			ev(0, core.EventTurnStart, turnStart(1)),
			ev(1, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
			ev(2, core.EventTurnStart, turnStart(2)),
			ev(3, core.EventStepStart, stepData(2, 2)),
		}, `seq 3: step/start expected step 1 in turn 2, got 2`},
		{"step/end of another step", with(ev(2, core.EventStepEnd, stepData(1, 2))),
			`seq 2: step/end names turn 1/step 2 but open is turn 1/step 1`},
		{"chunk outside the step", with(ev(2, core.EventAssistantChunk, `{"turn":1,"step":2,"chunk":{"type":"usage"}}`)),
			`seq 2: assistant/chunk names turn 1/step 2 but open is turn 1/step 1`},
		{"assistant message after the step", with(ev(2, core.EventStepEnd, stepData(1, 1)), sev(3, core.EventAssistantMessage, assistantMsg(1, 1, "a"))),
			`seq 3: assistant/message names turn 1/step 1 but open is turn 1/step null`},
		{"tool/call in another turn", with(ev(2, core.EventToolCall, toolCall(2, 1, "c1", "x", ""))),
			`seq 2: tool/call names turn 2/step 1 but open is turn 1/step 1`},
		{"tool/result without a call", with(sev(2, core.EventToolResult, toolResult(1, 1, "r", "c1", "x", false, ""), 1)),
			`seq 2: tool/result for c1 with no prior tool/call in this step`},
		{"tool/result for a call of an earlier step", with(
			ev(2, core.EventToolCall, toolCall(1, 1, "c1", "x", "")),
			ev(3, core.EventStepEnd, stepData(1, 1)),
			ev(4, core.EventStepStart, stepData(1, 2)),
			sev(5, core.EventToolResult, toolResult(1, 2, "r", "c1", "x", false, ""), 2),
		), `seq 5: tool/result for c1 with no prior tool/call in this step`},
		{"second tool/result for one call", with(
			ev(2, core.EventToolCall, toolCall(1, 1, "c1", "x", "")),
			sev(3, core.EventToolResult, toolResult(1, 1, "r", "c1", "x", false, ""), 2),
			sev(4, core.EventToolResult, toolResult(1, 1, "r2", "c1", "x", false, ""), 2),
		), `seq 4: tool/result for c1 with no prior tool/call in this step`},
		{"not-started code on a successful result", with(
			sev(2, core.EventToolResult, toolResult(1, 1, "r", "c9", "x", false, `,"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}`)),
		), `seq 2: tool/result for c9 with no prior tool/call in this step`},
		{"tool/result naming another step", with(
			ev(2, core.EventToolCall, toolCall(1, 1, "c1", "x", "")),
			sev(3, core.EventToolResult, toolResult(1, 2, "r", "c1", "x", false, ""), 2),
		), `seq 3: tool/result names turn 1/step 2 but open is turn 1/step 1`},
		{"tool/result rewrite outside a turn", []core.Event{
			ev(0, core.EventTurnStart, turnStart(1)),
			ev(1, core.EventStepStart, stepData(1, 1)),
			ev(2, core.EventToolCall, toolCall(1, 1, "c1", "x", "")),
			sev(3, core.EventToolResult, toolResult(1, 1, "r", "c1", "x", false, ""), 2),
			ev(4, core.EventStepEnd, stepData(1, 1)),
			ev(5, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
			rev(6, core.EventToolResult, toolResult(1, 1, "r", "c1", "", false, ""), 3, 3, 3),
		}, `seq 6: tool/result surface replacement appended outside any open turn`},
		{"todo/write outside a turn", []core.Event{ev(0, core.EventTodoWrite, `{"todos":[]}`)},
			`seq 0: todo/write appended outside any open turn (core execution events must be turn-enclosed)`},
		{"request/header outside a turn", []core.Event{ev(0, core.EventRequestHeader, `{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}`)},
			`seq 0: request/header appended outside any open turn (core execution events must be turn-enclosed)`},
		{"request/context outside a turn", []core.Event{ev(0, core.EventRequestContext, `{"provider":"p","model":"m"}`)},
			`seq 0: request/context appended outside any open turn (core execution events must be turn-enclosed)`},
		{"dispatch without ids", with(ev(2, core.EventCodeDispatchOpen, `{"rootCallId":"c1","parentCallId":"","subCallId":"c1:code:1"}`)),
			`seq 2: tool/code-dispatch-start must carry non-empty rootCallId, parentCallId, and subCallId`},
		{"dispatch with a foreign parent", with(ev(2, core.EventCodeDispatchOpen, `{"rootCallId":"c1","parentCallId":"c7:code:1","subCallId":"c1:code:1"}`)),
			`seq 2: tool/code-dispatch-start parentCallId c7:code:1 does not belong to rootCallId c1`},
		{"dispatch changing root", with(
			ev(2, core.EventCodeDispatchOpen, `{"rootCallId":"c1","parentCallId":"c1","subCallId":"s"}`),
			ev(3, core.EventCodeDispatch, `{"rootCallId":"c2","parentCallId":"c2","subCallId":"s"}`),
		), `seq 3: tool/code-dispatch changed rootCallId for subCallId s`},
		{"dispatch outside a turn", []core.Event{ev(0, core.EventCodeDispatch, `{"rootCallId":"c1","parentCallId":"c1","subCallId":"c1:code:1"}`)},
			`seq 0: tool/code-dispatch appended outside any open turn`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantCoreError(t, core.CheckRelations(tc.log), core.CodeInvalid, tc.msg)
		})
	}
}

func TestInterruptedTurnClosersPassRelations(t *testing.T) {
	log := []core.Event{
		ev(0, core.EventTurnStart, turnStart(1)),
		ev(1, core.EventStepStart, stepData(1, 1)),
		sev(2, core.EventAssistantMessage, assistantMsg(1, 1, "a", callBlock("c1", "read", `{}`), callBlock("c2", "read", `{}`))),
		ev(3, core.EventToolCall, toolCall(1, 1, "c1", "read", `{}`)),
	}
	repaired := append(clone(log), core.InterruptedTurnClosers(log)...)
	if err := core.CheckRelations(repaired); err != nil {
		t.Errorf("CheckRelations of a repaired log: %v", err)
	}
}
