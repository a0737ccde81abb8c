package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
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

// checkedStore is a CheckedStore that records the facts it is given.
type checkedStore struct {
	*fakeStore
	mu    sync.Mutex
	facts map[int64]*core.EventFacts // by seq, as handed over
	calls int
}

func newCheckedStore() *checkedStore {
	return &checkedStore{fakeStore: newFakeStore(), facts: map[int64]*core.EventFacts{}}
}

func (c *checkedStore) AppendChecked(ctx context.Context, id string, evs []core.Event, facts []*core.EventFacts) error {
	c.mu.Lock()
	c.calls++
	for i, e := range evs {
		c.facts[e.Seq] = facts[i]
	}
	c.mu.Unlock()
	return c.fakeStore.AppendEvents(ctx, id, evs)
}

// appendChecked appends data through a session over a checkedStore and
// returns the stored event and the facts the store was handed for it.
func appendChecked(t testing.TB, typ string, data any, op *core.SurfaceOp) (core.Event, *core.EventFacts, bool) {
	st := newCheckedStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Append(ctx, typ, data, core.AppendOptions{SurfaceOp: op})
	if err != nil {
		return core.Event{}, nil, false
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st.calls != 1 {
		t.Fatalf("the session used AppendChecked %d times, want 1", st.calls)
	}
	return e, st.facts[e.Seq], true
}

// TestAppendedFactsEqualDecoded: the facts a session hands its store with
// an event equal the ones a decode of the event's data gives, so the store
// (which takes them as given) and a reader of the stored log agree; and
// for core's types the session knows them without a decode.
func TestAppendedFactsEqualDecoded(t *testing.T) {
	for _, tc := range appendedFactsCases() {
		t.Run(tc.name, func(t *testing.T) {
			e, facts, ok := appendChecked(t, tc.typ, tc.data, tc.op)
			if !ok {
				t.Fatal("append refused")
			}
			known := !strings.Contains(tc.name, "unknown block") && !strings.Contains(tc.name, " as ") &&
				!strings.Contains(tc.name, "map") && !strings.HasPrefix(tc.name, "raw ")
			if (facts != nil) != known {
				t.Fatalf("facts handed over: %v, want %v", facts != nil, known)
			}
			if facts == nil {
				return
			}
			stored := core.Event{Type: e.Type, Seq: e.Seq, Time: e.Time, Data: bytes.Clone(e.Data), SurfaceOp: e.SurfaceOp}
			if got, want := core.FactsSansTexts(*facts), core.FactsOf(&stored); !reflect.DeepEqual(got, want) {
				t.Errorf("handed-over facts %+v\ndecoded facts     %+v", got, want)
			}
			var s1, s2 core.Summary = core.NewSummary(), core.NewSummary()
			s1.ApplyFacts(&e, facts)
			s2.Apply(&stored)
			if !reflect.DeepEqual(s1, s2) {
				t.Errorf("summary from the handed-over facts %+v, from the stored event %+v", s1, s2)
			}
		})
	}
}

// FuzzAppendedFacts: for arbitrary strings (invalid UTF-8 included) the
// facts a session computes from typed data equal the decoded ones.
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
		e, facts, ok := appendChecked(t, typ, data, op)
		if !ok {
			return // refused data has no facts to compare
		}
		if facts == nil {
			t.Fatalf("no facts for %s data of core's type", typ)
		}
		stored := core.Event{Type: e.Type, Seq: e.Seq, Data: bytes.Clone(e.Data), SurfaceOp: e.SurfaceOp}
		if got, want := core.FactsSansTexts(*facts), core.FactsOf(&stored); !reflect.DeepEqual(got, want) {
			t.Errorf("handed-over facts %+v\ndecoded facts     %+v", got, want)
		}
	})
}
