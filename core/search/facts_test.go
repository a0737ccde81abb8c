package search_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/search"
)

// factsStore is a CheckedStore that keeps the events and the facts a
// session hands it.
type factsStore struct {
	mu     sync.Mutex
	events []core.Event
	facts  []*core.EventFacts
}

func (s *factsStore) CreateSession(context.Context, core.SessionHeader) error { return nil }

func (s *factsStore) AppendEvents(ctx context.Context, id string, evs []core.Event) error {
	return s.AppendChecked(ctx, id, evs, make([]*core.EventFacts, len(evs)))
}

func (s *factsStore) AppendChecked(_ context.Context, _ string, evs []core.Event, facts []*core.EventFacts) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
	s.facts = append(s.facts, facts...)
	return nil
}

// checkIndexedAlike appends drafts through a session and checks that what
// each event contributes to the index from the facts the session handed
// the store equals what a decode of the stored data gives; typed counts the
// events whose words came with their facts.
func checkIndexedAlike(t *testing.T, drafts []core.Draft) (typed int) {
	t.Helper()
	st := &factsStore{}
	ctx := context.Background()
	s, err := core.NewSession(ctx, core.SessionHeader{ID: "s", Cwd: "/w"}, core.SessionOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drafts {
		if _, err := s.AppendMany(ctx, d); err != nil {
			continue // refused (a shape the log does not take): nothing to index
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range st.events {
		e := st.events[i]
		stored := core.Event{Type: e.Type, Seq: e.Seq, Time: e.Time, Data: json.RawMessage(string(e.Data)), SurfaceOp: e.SurfaceOp}
		want := search.Extract(&stored)
		got := search.ExtractFacts(&e, st.facts[i])
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("event %d (%s %s): the index from the appended value differs from a decode (-decoded +typed):\n%s", e.Seq, e.Type, e.Data, diff)
		}
		if f := st.facts[i]; f != nil && f.Texts() != nil {
			typed++
		}
	}
	return typed
}

func indexDrafts(bad, text, name, code string, isError bool) []core.Draft {
	user := core.NewUserMessage("u1", "first "+text+"\nsecond")
	user.Content = append(user.Content, &core.ImageBlock{}, &core.TextBlock{Text: "more " + bad})
	ctxMsg := core.NewContextMessage("u2", "plugin", "context "+text)
	unknown := core.NewUserMessage("u3", "x")
	unknown.Content = append(unknown.Content, &core.UnknownBlock{Type: "text", Raw: json.RawMessage(`{"type":"text","text":"raw words"}`)})
	asst := core.AssistantMessage{Turn: 1, Step: 1, Message: core.Message{ID: "a1", Role: core.RoleAssistant,
		Content: core.Content{&core.ReasoningBlock{Text: "think " + bad}, &core.TextBlock{Text: text}, &core.ToolCallBlock{ID: "c1", Name: name, Arguments: "{}"}},
		Source:  core.Source{Kind: core.SourceModel, Provider: "p", Model: "m"}}}
	result := core.ToolResultData{Turn: 1, Step: 1, Message: core.NewToolResultMessage("r1", "c1", core.Text(text+bad), isError)}
	if code != "" {
		result.Error = &core.ErrorInfo{Name: "ToolError " + bad, Code: code}
	}
	nested := core.ToolResultData{Turn: 1, Step: 1, Message: core.Message{ID: "r2", Role: core.RoleUser, Source: core.Source{Kind: core.SourceTool, CallID: "c2"},
		Content: core.Content{&core.ToolResultBlock{ToolCallID: "c2", Content: core.Content{&core.TextBlock{Text: "a"}, &core.ImageBlock{}, &core.TextBlock{Text: "b " + text}}}}}}
	return []core.Draft{
		{Type: core.EventTurnStart, Data: core.TurnStart{Turn: 1}},
		{Type: core.EventStepStart, Data: core.StepBoundary{Turn: 1, Step: 1}},
		{Type: core.EventUserMessage, Data: user, Options: core.AppendOptions{SurfaceOp: core.AppendOp()}},
		{Type: core.EventUserMessage, Data: ctxMsg, Options: core.AppendOptions{SurfaceOp: core.AppendOp()}},
		{Type: core.EventUserMessage, Data: unknown, Options: core.AppendOptions{SurfaceOp: core.AppendOp()}},
		{Type: core.EventAssistantMessage, Data: asst, Options: core.AppendOptions{SurfaceOp: core.AppendOp()}},
		{Type: core.EventToolCall, Data: core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: name + bad, Arguments: `{"path":"a/` + text + `","n":1,"deep":{"k":[true,null]}}`}},
		{Type: core.EventToolCall, Data: &core.ToolCall{Turn: 1, Step: 1, CallID: "c2", Name: "bash", Arguments: "not json " + bad}},
		{Type: core.EventToolResult, Data: result, Options: core.AppendOptions{SurfaceOp: core.AppendOp()}},
		{Type: core.EventToolResult, Data: &nested, Options: core.AppendOptions{SurfaceOp: core.AppendOp()}},
		{Type: core.EventToolResult, Data: result, Options: core.AppendOptions{SurfaceOp: &core.SurfaceOp{Replace: true, Start: 8, End: 8}, SourceEventSeqs: []int64{8}}},
		{Type: core.EventSessionTitle, Data: core.SessionTitle{Title: "title " + text + bad}},
		{Type: core.EventStepEnd, Data: core.StepBoundary{Turn: 1, Step: 1}},
		{Type: core.EventTurnEnd, Data: core.TurnEnd{Turn: 1, Reason: core.TurnEndReason{Kind: core.TurnError, Error: &core.LLMFailure{Message: "model said no " + bad, Code: code}}}},
		{Type: core.EventTurnEnd, Data: core.TurnEnd{Turn: 2, Reason: core.TurnEndReason{Kind: core.TurnCompleted}}},
	}
}

// TestIndexFromTypedFactsUnchanged: the search index files the same
// documents from the words a session hands the store with each event as it
// did decoding the event's data, and for core's types it is handed them.
func TestIndexFromTypedFactsUnchanged(t *testing.T) {
	typed := checkIndexedAlike(t, indexDrafts("bad \xff\xfe \xe2\x82", "hello world", "read", "TOOL_FAILED", true))
	if typed < 11 {
		t.Errorf("only %d events came with their words: the index decodes again", typed)
	}
}

func FuzzIndexFromTypedFacts(f *testing.F) {
	f.Add("\xff", "text\nmore", "bash", "CODE", true)
	f.Add("", "", "", "", false)
	f.Add("é", `{"a":"b"}`, "edit", "", false)
	f.Fuzz(func(t *testing.T, bad, text, name, code string, isError bool) {
		checkIndexedAlike(t, indexDrafts(bad, text, name, code, isError))
	})
}
