package core_test

import (
	"encoding/json"
	"testing"

	"prism/core"
)

func TestValidateLogAcceptsValidLogs(t *testing.T) {
	log := transcriptLog()
	log = append(log,
		ev(12, core.EventTurnStart, turnStart(2)),
		ev(13, core.EventRequestHeader, `{"header":{"config":{"provider":"deepseek","model":"deepseek-chat","reasoningEffort":"high","maxTokens":8},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}`),
		ev(14, "future/thing", `{"x":1}`),
		rev(15, core.EventUserMessage, userMsg("sum", "summary"), 2, 4, 2, 4),
		ev(16, core.EventSessionEndSeed, `{}`),
	)
	log[14].Ignorable = true
	if err := core.ValidateLog(header("s1"), log); err != nil {
		t.Fatalf("ValidateLog: %v", err)
	}
	if err := core.ValidateLog(header("s1"), nil); err != nil {
		t.Fatalf("ValidateLog of an empty log: %v", err)
	}
}

func TestValidateLogRejects(t *testing.T) {
	type mutate func(log []core.Event) []core.Event
	set := func(i int, e core.Event) mutate {
		return func(log []core.Event) []core.Event { log[i] = e; return log }
	}
	resultWith := func(message string) core.Event {
		return sev(6, core.EventToolResult, `{"turn":1,"step":1,"message":`+message+`}`, 5)
	}
	cases := []struct {
		name string
		mut  mutate
		msg  string
	}{
		{"seq gap", func(log []core.Event) []core.Event { return append(log[:3], log[4:]...) },
			`seed event at index 3 has seq 4 (expected 3); seed must be contiguous from 0`},
		{"first seq not zero", func(log []core.Event) []core.Event { log[0].Seq = 1; return log },
			`seed event at index 0 has seq 1 (expected 0); seed must be contiguous from 0`},
		{"duplicate seq", func(log []core.Event) []core.Event { log[5].Seq = 4; return log },
			`seed event at index 5 has seq 4 (expected 5); seed must be contiguous from 0`},
		{"negative seq", func(log []core.Event) []core.Event { log[2].Seq = -2; return log },
			`seed event at index 2 has an invalid event envelope`},
		{"empty type", func(log []core.Event) []core.Event { log[1].Type = ""; return log },
			`seed event at index 1 has an invalid event envelope`},
		{"missing data", func(log []core.Event) []core.Event { log[1].Data = nil; return log },
			`seed event at index 1 has an invalid event envelope`},
		{"unsafe time", func(log []core.Event) []core.Event { log[1].Time = 1 << 60; return log },
			`seed event at index 1 has an invalid event envelope`},
		{"lossy data", set(1, ev(1, core.EventStepStart, `{"turn":1,"step":-0}`)),
			`seed event at index 1 is not losslessly JSON-serializable: value is not lossless JSON: negative zero`},
		{"unknown required type", set(3, ev(3, "future/thing", `{}`)),
			`seed event at index 3 has unknown required session event type "future/thing"`},
		{"legacy header delta", set(3, ev(3, "request/header-delta", `{}`)),
			`seed event at index 3 uses unsupported legacy request/header-delta format`},
		{"fallback header", set(3, ev(3, core.EventRequestHeader, `{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}`)),
			`seed event at index 3 uses unsupported legacy request/header reason "fallback"`},
		{"header without provider", set(3, ev(3, core.EventRequestHeader, `{"header":{"config":{"model":"m"}},"reason":"initial"}`)),
			`seed request/header at index 3 lacks provider/model`},
		{"header with empty reasoningEffort", set(3, ev(3, core.EventRequestHeader, `{"header":{"config":{"provider":"p","model":"m","reasoningEffort":""}},"reason":"initial"}`)),
			`seed request/header at index 3 has an invalid reasoningEffort`},
		{"header with unbacked adapterDefaults", set(3, ev(3, core.EventRequestHeader, `{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}`)),
			`seed request/header at index 3 has invalid adapterDefaults`},
		{"user message without id", set(2, sev(2, core.EventUserMessage, `{"id":"","role":"user","content":[],"source":{"kind":"user"}}`)),
			`seed user/message at index 2 lacks an identified message`},
		{"user message with assistant role", set(2, sev(2, core.EventUserMessage, `{"id":"u","role":"assistant","content":[],"source":{"kind":"user"}}`)),
			`seed user/message at index 2 message must have role "user"`},
		{"user message without source", set(2, sev(2, core.EventUserMessage, `{"id":"u","role":"user","content":[]}`)),
			`seed user/message at index 2 message has invalid source`},
		{"user message with string content", set(2, sev(2, core.EventUserMessage, `{"id":"u","role":"user","content":"hi","source":{"kind":"user"}}`)),
			`seed user/message at index 2 message has invalid content`},
		{"assistant without model source", set(4, sev(4, core.EventAssistantMessage, `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"p"}}}`, 3)),
			`seed assistant/message at index 4 message must have model source`},
		{"tool result without message", set(6, sev(6, core.EventToolResult, `{"turn":1,"step":1}`, 5)),
			`seed tool/result at index 6 lacks an identified message`},
		{"tool result with assistant role", set(6, resultWith(`{"id":"r","role":"assistant","content":[],"source":{"kind":"tool","callId":"c1"}}`)),
			`seed tool/result at index 6 message must have role "user"`},
		{"tool result with user source", set(6, resultWith(`{"id":"r","role":"user","content":[],"source":{"kind":"user"}}`)),
			`seed tool/result at index 6 message must have tool source`},
		{"tool result with empty callId", set(6, resultWith(`{"id":"r","role":"user","content":[],"source":{"kind":"tool","callId":""}}`)),
			`seed tool/result at index 6 message must have tool source`},
		{"tool result without blocks", set(6, resultWith(`{"id":"r","role":"user","content":[],"source":{"kind":"tool","callId":"c1"}}`)),
			`seed tool/result at index 6 message must contain one tool-result block`},
		{"tool result with two blocks", set(6, resultWith(`{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":false},{"type":"text","text":"x"}],"source":{"kind":"tool","callId":"c1"}}`)),
			`seed tool/result at index 6 message must contain one tool-result block`},
		{"tool result with a text block", set(6, resultWith(`{"id":"r","role":"user","content":[{"type":"text","text":"x"}],"source":{"kind":"tool","callId":"c1"}}`)),
			`seed tool/result at index 6 message must contain one tool-result block`},
		{"tool result block without content array", set(6, resultWith(`{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":"x","isError":false}],"source":{"kind":"tool","callId":"c1"}}`)),
			`seed tool/result at index 6 message must contain one tool-result block`},
		{"tool result with mismatched ids", set(6, resultWith(`{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[],"isError":false}],"source":{"kind":"tool","callId":"c1"}}`)),
			`seed tool/result at index 6 message has mismatched tool call ids`},
		{"surface event without surfaceOp", set(2, ev(2, core.EventUserMessage, userMsg("u1", "hello"))),
			`invalid seed event at index 2: session event "user/message" is surface-eligible and requires a surfaceOp marker`},
		{"non-surface event with surfaceOp", set(5, sev(5, core.EventToolCall, toolCall(1, 1, "c1", "read", `{}`))),
			`invalid seed event at index 5: session event "tool/call" is not surface-eligible and cannot carry surfaceOp`},
		{"forward source", set(6, sev(6, core.EventToolResult, toolResult(1, 1, "r1", "c1", "x", false, ""), 6)),
			`invalid seed event at index 6: sourceEventSeqs must reference earlier events: 6 >= current seq 6`},
		{"replace of a missing node", func(log []core.Event) []core.Event {
			return append(log, rev(12, core.EventUserMessage, userMsg("s", "x"), 3, 4, 3, 4))
		}, `invalid seed event at index 12: surface replace: start seq 3 not found in surface`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := core.ValidateLog(header("s1"), tc.mut(transcriptLog()))
			wantCoreError(t, err, core.CodeInvalid, tc.msg)
			// ValidateDecodedLog keeps every check but the scan of data
			// its caller's decoder checked already.
			err = core.ValidateDecodedLog(header("s1"), tc.mut(transcriptLog()))
			if tc.name == "lossy data" {
				if err != nil {
					t.Errorf("ValidateDecodedLog scanned the data again: %v", err)
				}
				return
			}
			wantCoreError(t, err, core.CodeInvalid, tc.msg)
		})
	}
}

func TestValidateLogHeader(t *testing.T) {
	neg, big := int64(-1), int64(1)<<60
	cases := []struct {
		name string
		mut  func(h *core.SessionHeader)
		msg  string
	}{
		{"version", func(h *core.SessionHeader) { h.Version = 1 }, `session header version must be 0, got 1`},
		{"empty id", func(h *core.SessionHeader) { h.ID = "" }, `session header id must be a non-empty string`},
		{"negative createdAt", func(h *core.SessionHeader) { h.CreatedAt = -5 }, `session header createdAt must be a non-negative safe integer`},
		{"unsafe createdAt", func(h *core.SessionHeader) { h.CreatedAt = big }, `session header createdAt must be a non-negative safe integer`},
		{"relative cwd", func(h *core.SessionHeader) { h.Cwd = "work" }, `session header cwd must be an absolute path, got "work"`},
		{"origin", func(h *core.SessionHeader) { h.Origin = "fork" }, `session header origin must be "subagent"`},
		{"seedLength", func(h *core.SessionHeader) { h.SeedLength = &neg }, `session header seedLength must be a non-negative safe integer`},
		{"delegationDepth", func(h *core.SessionHeader) { h.DelegationDepth = &neg }, `session header delegationDepth must be a non-negative safe integer`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := header("s1")
			tc.mut(&h)
			wantCoreError(t, core.ValidateLog(h, nil), core.CodeInvalid, tc.msg)
		})
	}
	h := header("s1")
	h.Cwd, h.Origin = "", "subagent"
	if err := core.ValidateLog(h, nil); err != nil {
		t.Errorf("header without cwd, subagent origin: %v", err)
	}
}

// TestValidateLogDecodedEnvelope checks a log read from JSONL lines the way
// an importer would decode it.
func TestValidateLogDecodedEnvelope(t *testing.T) {
	lines := []string{
		`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`,
		`{"type":"user/message","seq":1,"time":2,"data":` + userMsg("u", "x") + `,"surfaceOp":"append"}`,
		`{"type":"x/unknown","seq":2,"time":3,"data":null,"ignorable":true}`,
	}
	var log []core.Event
	for _, l := range lines {
		var e core.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("decode %s: %v", l, err)
		}
		log = append(log, e)
	}
	if err := core.ValidateLog(header("s1"), log); err != nil {
		t.Fatalf("ValidateLog: %v", err)
	}
	log[2].Ignorable = false
	wantCoreError(t, core.ValidateLog(header("s1"), log), core.CodeInvalid,
		`seed event at index 2 has unknown required session event type "x/unknown"`)
}
