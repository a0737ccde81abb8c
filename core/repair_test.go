package core_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

const (
	notStartedText     = `The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.`
	outcomeUnknownText = `The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.`
)

func TestInterruptedTurnCloserTexts(t *testing.T) {
	if core.ToolNotStartedText != notStartedText {
		t.Errorf("ToolNotStartedText = %q", core.ToolNotStartedText)
	}
	if core.ToolOutcomeUnknownText != outcomeUnknownText {
		t.Errorf("ToolOutcomeUnknownText = %q", core.ToolOutcomeUnknownText)
	}
}

func TestInterruptedTurnClosers(t *testing.T) {
	// open: turn 1, step 2 with c1 (logged at seq 6) and c2 (never started).
	open := []core.Event{
		ev(0, core.EventTurnStart, turnStart(1)),
		ev(1, core.EventStepStart, stepData(1, 1)),
		sev(2, core.EventUserMessage, userMsg("u1", "go")),
		sev(3, core.EventAssistantMessage, assistantMsg(1, 1, "a1", callBlock("c0", "read", `{}`)), 2),
		ev(4, core.EventStepEnd, stepData(1, 1)),
		ev(5, core.EventStepStart, stepData(1, 2)),
		sev(6, core.EventAssistantMessage, assistantMsg(1, 2, "a2", textBlock("two calls"), callBlock("c1", "bash", `{"command":"rm x"}`), callBlock("c2", "read", `{}`))),
		ev(7, core.EventToolCall, toolCall(1, 2, "c1", "bash", `{"command":"rm x"}`)),
		ev(8, "todo/write", `{"todos":[]}`),
	}
	cases := []struct {
		name string
		log  []core.Event
		want []string
	}{
		{"empty log", nil, nil},
		{"closed turn", append(clone(open[:5]), ev(5, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)), nil},
		{"open step with a logged call and an unstarted call", open, []string{
			`{"type":"tool/result","seq":9,"time":1008,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c1-9","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"` + outcomeUnknownText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[7]}`,
			`{"type":"tool/result","seq":10,"time":1008,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c2-10","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c2"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
			`{"type":"step/end","seq":11,"time":1008,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":12,"time":1008,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"answered call is not pending", append(clone(open), sev(9, core.EventToolResult, toolResult(1, 2, "r1", "c1", "ok", false, ""), 7)), []string{
			`{"type":"tool/result","seq":10,"time":1009,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c2-10","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c2"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
			`{"type":"step/end","seq":11,"time":1009,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":12,"time":1009,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"closed step leaves no pending calls", append(clone(open), ev(9, core.EventStepEnd, stepData(1, 2))), []string{
			`{"type":"turn/end","seq":10,"time":1009,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"open step without calls", clone(open[:6]), []string{
			`{"type":"step/end","seq":6,"time":1005,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":7,"time":1005,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"a call waiting for approval never started: its approval is cancelled", append(clone(open),
			ev(9, core.EventApprovalAsked, `{"id":"ap1","toolName":"bash","callId":"c1","reason":"command matches ^rm "}`)), []string{
			`{"type":"approval/decided","seq":10,"time":1009,"data":{"id":"ap1","outcome":"cancelled","reason":"the server stopped while the call waited for approval"}}`,
			`{"type":"tool/result","seq":11,"time":1009,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c1-11","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append","sourceEventSeqs":[7]}`,
			`{"type":"tool/result","seq":12,"time":1009,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c2-12","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c2"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
			`{"type":"step/end","seq":13,"time":1009,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":14,"time":1009,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"a rejected call without its result never started", append(clone(open),
			ev(9, core.EventApprovalAsked, `{"id":"ap1","toolName":"bash","callId":"c1"}`),
			ev(10, core.EventApprovalDecided, `{"id":"ap1","outcome":"rejected","by":"the owner"}`)), []string{
			`{"type":"tool/result","seq":11,"time":1010,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c1-11","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append","sourceEventSeqs":[7]}`,
			`{"type":"tool/result","seq":12,"time":1010,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c2-12","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c2"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
			`{"type":"step/end","seq":13,"time":1010,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":14,"time":1010,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"an approved call may have run: its outcome is unknown", append(clone(open),
			ev(9, core.EventApprovalAsked, `{"id":"ap1","toolName":"bash","callId":"c1"}`),
			ev(10, core.EventApprovalDecided, `{"id":"ap1","outcome":"allowed-once"}`)), []string{
			`{"type":"tool/result","seq":11,"time":1010,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c1-11","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"` + outcomeUnknownText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[7]}`,
			`{"type":"tool/result","seq":12,"time":1010,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c2-12","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c2"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
			`{"type":"step/end","seq":13,"time":1010,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":14,"time":1010,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"an approval of an answered call is not reopened", append(clone(open),
			ev(9, core.EventApprovalAsked, `{"id":"ap1","toolName":"bash","callId":"c1"}`),
			sev(10, core.EventToolResult, toolResult(1, 2, "r1", "c1", "ok", false, ""), 7)), []string{
			`{"type":"tool/result","seq":11,"time":1010,"data":{"turn":1,"step":2,"message":{"id":"interrupted-tool-result-c2-11","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[{"type":"text","text":"` + notStartedText + `"}],"isError":true}],"source":{"kind":"tool","callId":"c2"}},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}`,
			`{"type":"step/end","seq":12,"time":1010,"data":{"turn":1,"step":2}}`,
			`{"type":"turn/end","seq":13,"time":1010,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
		{"tool/call without an assistant block is not pending", []core.Event{
			ev(0, core.EventTurnStart, turnStart(3)),
			ev(1, core.EventStepStart, stepData(3, 1)),
			ev(2, core.EventToolCall, toolCall(3, 1, "cx", "read", `{}`)),
		}, []string{
			`{"type":"step/end","seq":3,"time":1002,"data":{"turn":3,"step":1}}`,
			`{"type":"turn/end","seq":4,"time":1002,"data":{"turn":3,"reason":{"kind":"interrupted"}}}`,
		}},
		{"earlier turn's calls do not leak", []core.Event{
			ev(0, core.EventTurnStart, turnStart(0)),
			ev(1, core.EventStepStart, stepData(0, 0)),
			sev(2, core.EventAssistantMessage, assistantMsg(0, 0, "a", callBlock("old", "read", `{}`))),
			ev(3, core.EventTurnStart, turnStart(1)),
		}, []string{
			`{"type":"turn/end","seq":4,"time":1003,"data":{"turn":1,"reason":{"kind":"interrupted"}}}`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := core.InterruptedTurnClosers(tc.log)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("closers = %v, want nil", eventJSON(t, got))
				}
				return
			}
			if diff := cmp.Diff(tc.want, eventJSON(t, got)); diff != "" {
				t.Errorf("closers (-want +got):\n%s", diff)
			}
			// The repaired log is a valid, closed log.
			repaired := append(clone(tc.log), got...)
			if err := core.ValidateLog(header("s1"), repaired); err != nil {
				t.Errorf("repaired log invalid: %v", err)
			}
			if more := core.InterruptedTurnClosers(repaired); more != nil {
				t.Errorf("repaired log still needs closers: %v", eventJSON(t, more))
			}
		})
	}
}
