package core_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"prism/core"
)

// appendedFactsCases are typed event data as the loop and tools append
// them, with the corners where a value and its JSON differ: invalid UTF-8
// (encoded as U+FFFD), blocks only their raw JSON describes, data of
// another type than the event's.
func appendedFactsCases() []struct {
	name string
	typ  string
	data any
	op   *core.SurfaceOp
} {
	bad := "bad \xff\xfe utf-8 \xe2\x82"
	result := core.ToolResultData{Turn: 1, Step: 1, Message: core.NewToolResultMessage("r1", "call-"+bad, core.Text("out"), true),
		Error: &core.ErrorInfo{Name: "E", Code: "CODE_" + bad}, Meta: json.RawMessage(`{"a": 1}`)}
	user := core.NewUserMessage("u1", "first line "+bad+"\nsecond")
	user.Content = append(user.Content, &core.ImageBlock{}, &core.TextBlock{Text: "more"})
	unknown := core.NewUserMessage("u2", "x")
	unknown.Content = append(unknown.Content, &core.UnknownBlock{Type: "text", Raw: json.RawMessage(`{"type":"text","text":"raw"}`)})
	assistant := core.AssistantMessage{Turn: 1, Step: 1, Message: core.Message{ID: "a1", Role: core.RoleAssistant, Content: core.Text("hi"),
		Source: core.Source{Kind: core.SourceModel, Provider: "p", Model: "m"}}, Usage: &core.TokenUsage{InputTokens: 7, OutputTokens: 3}}
	return []struct {
		name string
		typ  string
		data any
		op   *core.SurfaceOp
	}{
		{"tool/call", core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: "c" + bad, Name: "n", Arguments: "{}"}, nil},
		{"tool/call pointer", core.EventToolCall, &core.ToolCall{CallID: "c2"}, nil},
		{"tool/result error", core.EventToolResult, result, core.AppendOp()},
		{"tool/result pointer", core.EventToolResult, &result, core.AppendOp()},
		{"user/message", core.EventUserMessage, user, core.AppendOp()},
		{"user/message unknown block", core.EventUserMessage, unknown, core.AppendOp()},
		{"assistant/message usage", core.EventAssistantMessage, assistant, core.AppendOp()},
		{"assistant/message no usage", core.EventAssistantMessage, core.AssistantMessage{Message: assistant.Message}, core.AppendOp()},
		{"turn/end", core.EventTurnEnd, core.TurnEnd{Turn: 1, Reason: core.TurnEndReason{Kind: core.TurnInterrupted}}, nil},
		{"session/title", core.EventSessionTitle, core.SessionTitle{Title: "  named " + bad}, nil},
		{"approval/asked as tool/call data", core.EventApprovalAsked, core.ToolCall{CallID: "c9"}, nil},
		{"subagent/descriptor map", core.EventSubagentDescr, map[string]any{"mode": "one-shot"}, nil},
		{"step/start", core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1}, nil},
		{"raw tool/call", core.EventToolCall, json.RawMessage(`{"turn":1,"step":1,"callId":"raw","name":"n","arguments":""}`), nil},
	}
}

// TestAppendedFactsEqualDecoded: the facts an appended event carries equal
// the ones a decode of its data gives, so the store (which reads the
// carried facts) and a reader of the stored log agree.
func TestAppendedFactsEqualDecoded(t *testing.T) {
	for _, tc := range appendedFactsCases() {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newMemSession(t).Append(ctx, tc.typ, tc.data, core.AppendOptions{SurfaceOp: tc.op})
			if err != nil {
				t.Fatal(err)
			}
			stored := core.Event{Type: e.Type, Seq: e.Seq, Time: e.Time, Data: bytes.Clone(e.Data), SurfaceOp: e.SurfaceOp}
			if got, want := core.FactsOf(&e), core.FactsOf(&stored); !reflect.DeepEqual(got, want) {
				t.Errorf("carried facts %+v\ndecoded facts %+v", got, want)
			}
			var s1, s2 core.Summary = core.NewSummary(), core.NewSummary()
			s1.Apply(&e)
			s2.Apply(&stored)
			if s1 != s2 {
				t.Errorf("summary from the appended event %+v, from the stored one %+v", s1, s2)
			}
		})
	}
}

// TestCarriedFactsNeedNoDecode: reading an appended tool/result's facts
// allocates nothing (no decode), while the same event read back from
// storage decodes.
func TestCarriedFactsNeedNoDecode(t *testing.T) {
	data := core.ToolResultData{Turn: 1, Step: 1, Message: core.NewToolResultMessage("r1", "c1", core.Text("out"), false)}
	e, err := newMemSession(t).Append(ctx, core.EventToolResult, data, appendOp)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = core.FactsOf(&e) }); n != 0 {
		t.Errorf("FactsOf of an appended event allocates %.0f times, want 0 (no decode)", n)
	}
	stored := core.Event{Type: e.Type, Seq: e.Seq, Data: bytes.Clone(e.Data), SurfaceOp: e.SurfaceOp}
	if n := testing.AllocsPerRun(100, func() { _ = core.FactsOf(&stored) }); n == 0 {
		t.Error("FactsOf of a stored event allocates nothing: the test no longer tells a decode apart")
	}
}

// TestCheckedFollowsData: an appended event and its copies are checked;
// replacing a copy's Data, or decoding an event from JSON, is not.
func TestCheckedFollowsData(t *testing.T) {
	e, err := newMemSession(t).Append(ctx, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cp := e
	if !e.Checked() || !cp.Checked() {
		t.Fatal("an appended event (or its copy) is not checked")
	}
	cp.Data = bytes.Clone(e.Data)
	if cp.Checked() {
		t.Error("a copy whose Data was replaced is still checked")
	}
	if f := core.FactsOf(&cp); f.CallID() != "" {
		t.Errorf("facts %+v", f)
	}
	var decoded core.Event
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Checked() {
		t.Error("an event decoded from JSON is checked")
	}
}

// FuzzAppendedFacts: for arbitrary strings (invalid UTF-8 included) the
// facts carried from typed data equal the decoded ones.
func FuzzAppendedFacts(f *testing.F) {
	f.Add("title", "text\nmore", "call-1", "CODE", true, uint8(0))
	f.Add("\xff", "\xe2\x82", "\xc0\xaf", "", false, uint8(3))
	f.Fuzz(func(t *testing.T, title, text, callID, code string, isError bool, kind uint8) {
		var typ string
		var data any
		var op *core.SurfaceOp
		switch kind % 5 {
		case 0:
			typ, data = core.EventSessionTitle, core.SessionTitle{Title: title}
		case 1:
			typ, data, op = core.EventUserMessage, core.Message{ID: "u", Role: core.RoleUser, Content: core.Content{&core.TextBlock{Text: text}, &core.TextBlock{Text: title}},
				Source: core.Source{Kind: core.SourceUser}}, core.AppendOp()
		case 2:
			typ, data = core.EventToolCall, core.ToolCall{CallID: callID, Name: title, Arguments: text}
		case 3:
			d := core.ToolResultData{Message: core.NewToolResultMessage("r", callID, core.Text(text), isError)}
			if code != "" {
				d.Error = &core.ErrorInfo{Name: title, Code: code}
			}
			typ, data, op = core.EventToolResult, d, core.AppendOp()
		case 4:
			typ, data = core.EventTurnEnd, core.TurnEnd{Turn: 1, Reason: core.TurnEndReason{Kind: code}}
		}
		s, err := core.NewSession(ctx, core.SessionHeader{ID: "fuzz"}, core.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.Append(ctx, typ, data, core.AppendOptions{SurfaceOp: op})
		if err != nil {
			return // refused data has no facts to compare
		}
		stored := core.Event{Type: e.Type, Seq: e.Seq, Data: bytes.Clone(e.Data), SurfaceOp: e.SurfaceOp}
		if got, want := core.FactsOf(&e), core.FactsOf(&stored); !reflect.DeepEqual(got, want) {
			t.Errorf("carried facts %+v\ndecoded facts %+v", got, want)
		}
	})
}
