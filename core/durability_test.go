package core_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

// failAfter bounds a wait that should finish at once; it guards against a
// hang and is no synchronization.
func failAfter(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestAppendDoesNotWaitForTheStore: appends return while a commit is
// blocked in the store; they ride the next commit together; observers see
// only committed events, in seq order.
func TestAppendDoesNotWaitForTheStore(t *testing.T) {
	st := newFakeStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st, Now: fixedClock(1), FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var observed []int64
	sawLast := make(chan struct{}) // observers may run after Sync returns
	s.OnAppend(func(e core.Event) {
		if stored := st.stored("s1"); int64(len(stored)) <= e.Seq {
			t.Errorf("observer saw seq %d before the store held it (%d stored)", e.Seq, len(stored))
		}
		mu.Lock()
		observed = append(observed, e.Seq)
		mu.Unlock()
		if e.Seq == 2 {
			close(sawLast)
		}
	})
	entered, release := st.holdNext()
	e0 := mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	s.Flush()
	<-entered // the commit of e0 is now blocked inside the store
	e1 := mustAppend(t, s, core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1}, core.AppendOptions{})
	e2 := mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u", "x"), appendOp)
	if s.NextSeq() != 3 || s.Durable() != 0 {
		t.Errorf("with the store blocked: NextSeq %d, Durable %d; want 3, 0", s.NextSeq(), s.Durable())
	}
	mu.Lock()
	if len(observed) != 0 {
		t.Errorf("observers saw %v before any commit", observed)
	}
	mu.Unlock()
	release()
	if err := s.WaitDurable(failAfter(t), e0.Seq); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(failAfter(t)); err != nil {
		t.Fatal(err)
	}
	if s.Durable() != 3 || st.calls != 2 {
		t.Errorf("Durable %d after %d store calls; want 3 after 2 (e1 and e2 in one commit)", s.Durable(), st.calls)
	}
	if diff := cmp.Diff(eventJSON(t, []core.Event{e0, e1, e2}), eventJSON(t, st.stored("s1"))); diff != "" {
		t.Errorf("stored (-appended +stored):\n%s", diff)
	}
	select {
	case <-sawLast:
	case <-failAfter(t).Done():
		t.Fatal("the observers never saw seq 2")
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]int64{0, 1, 2}, observed); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
}

// TestFlushDelayCommitsWithoutDurabilityPoint: an event nobody syncs is
// committed on its own within FlushDelay.
func TestFlushDelayCommitsWithoutDurabilityPoint(t *testing.T) {
	st := newFakeStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st, FlushDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	if err := s.WaitDurable(failAfter(t), e.Seq); err != nil { // WaitDurable does not hasten the commit
		t.Fatal(err)
	}
	if got := len(st.stored("s1")); got != 1 {
		t.Errorf("store holds %d events, want 1", got)
	}
}

// TestAppendMany: one validation pass (all or none), one store call,
// surface rules checked against the earlier events of the batch.
func TestAppendMany(t *testing.T) {
	st := newFakeStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st, Now: fixedClock(10), FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	mustAppend(t, s, core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1}, core.AppendOptions{})
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	callsBefore := st.calls

	// A bad draft anywhere refuses the whole batch.
	for _, bad := range [][]core.Draft{
		{{Type: core.EventToolCall, Data: core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "n"}},
			{Type: core.EventUserMessage, Data: core.NewUserMessage("u", "x")}}, // no surfaceOp
		{{Type: core.EventToolCall, Data: core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "n"}},
			{Type: core.EventToolResult, Data: json.RawMessage(toolResult(1, 1, "r", "c1", "ok", false, "")),
				Options: core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{4}}}}, // not earlier
		{{Type: core.EventToolCall, Data: core.ToolCall{}}, {Type: ""}},
	} {
		if evs, err := s.AppendMany(ctx, bad...); err == nil || core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("AppendMany = %v, %v; want CodeInvalid", evs, err)
		}
	}
	if s.NextSeq() != 2 {
		t.Fatalf("a refused batch left seq at %d, want 2", s.NextSeq())
	}

	evs, err := s.AppendMany(ctx,
		core.Draft{Type: core.EventToolCall, Data: core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "n", Arguments: "{}"}},
		core.Draft{Type: core.EventToolCall, Data: core.ToolCall{Turn: 1, Step: 1, CallID: "c2", Name: "n", Arguments: "{}"}},
		core.Draft{Type: core.EventToolResult, Data: json.RawMessage(toolResult(1, 1, "r1", "c1", "ok", false, "")),
			Options: core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{2}}}, // cites the batch's first event
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := []int64{evs[0].Seq, evs[1].Seq, evs[2].Seq}; !slices.Equal(got, []int64{2, 3, 4}) {
		t.Errorf("seqs %v, want [2 3 4]", got)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st.calls != callsBefore+1 {
		t.Errorf("%d store calls for one batch, want 1", st.calls-callsBefore)
	}
	if diff := cmp.Diff(eventJSON(t, s.Events()), eventJSON(t, st.stored("s1"))); diff != "" {
		t.Errorf("store differs from memory (-memory +store):\n%s", diff)
	}
	if got := len(s.DeriveMessages()); got != 1 {
		t.Errorf("transcript has %d messages, want the batch's tool result", got)
	}
}

// TestTypedShapeMatchesJSON: typed event data is checked without decoding
// its encoding, with the very verdict (and text) the JSON check gives.
func TestTypedShapeMatchesJSON(t *testing.T) {
	good := core.NewToolResultMessage("r1", "c1", core.Text("ok"), false)
	model := core.Source{Kind: core.SourceModel, Provider: "p", Model: "m"}
	assistant := func(mut func(*core.Message)) core.AssistantMessage {
		m := core.Message{ID: "a1", Role: core.RoleAssistant, Content: core.Text("hi"), Source: model}
		if mut != nil {
			mut(&m)
		}
		return core.AssistantMessage{Turn: 1, Step: 1, Message: m}
	}
	result := func(mut func(*core.Message)) core.ToolResultData {
		m := good
		m.Content = slices.Clone(good.Content)
		if mut != nil {
			mut(&m)
		}
		return core.ToolResultData{Turn: 1, Step: 1, Message: m}
	}
	user := func(mut func(*core.Message)) core.Message {
		m := core.NewUserMessage("u1", "hello")
		if mut != nil {
			mut(&m)
		}
		return m
	}
	cases := []struct {
		name string
		typ  string
		data any
	}{
		{"user ok", core.EventUserMessage, user(nil)},
		{"user no id", core.EventUserMessage, user(func(m *core.Message) { m.ID = "" })},
		{"user wrong role", core.EventUserMessage, user(func(m *core.Message) { m.Role = core.RoleAssistant })},
		{"user no source", core.EventUserMessage, user(func(m *core.Message) { m.Source = core.Source{} })},
		{"user nil content", core.EventUserMessage, user(func(m *core.Message) { m.Content = nil })},
		{"user pointer", core.EventUserMessage, ptr(user(nil))},
		{"assistant ok", core.EventAssistantMessage, assistant(nil)},
		{"assistant pointer", core.EventAssistantMessage, ptr(assistant(nil))},
		{"assistant user source", core.EventAssistantMessage, assistant(func(m *core.Message) { m.Source = core.Source{Kind: core.SourceUser} })},
		{"assistant no model", core.EventAssistantMessage, assistant(func(m *core.Message) { m.Source.Model = "" })},
		{"assistant wrong role", core.EventAssistantMessage, assistant(func(m *core.Message) { m.Role = core.RoleUser })},
		{"result ok", core.EventToolResult, result(nil)},
		{"result pointer", core.EventToolResult, ptr(result(nil))},
		{"result no call id", core.EventToolResult, result(func(m *core.Message) { m.Source.CallID = "" })},
		{"result model source", core.EventToolResult, result(func(m *core.Message) { m.Source.Kind = core.SourceModel })},
		{"result two blocks", core.EventToolResult, result(func(m *core.Message) { m.Content = append(m.Content, &core.TextBlock{Text: "x"}) })},
		{"result text block", core.EventToolResult, result(func(m *core.Message) { m.Content = core.Text("x") })},
		{"result no blocks", core.EventToolResult, result(func(m *core.Message) { m.Content = nil })},
		{"result mismatched ids", core.EventToolResult, result(func(m *core.Message) {
			m.Content = core.Content{&core.ToolResultBlock{ToolCallID: "other", Content: core.Text("x")}}
		})},
		{"result nil block content", core.EventToolResult, result(func(m *core.Message) {
			m.Content = core.Content{&core.ToolResultBlock{ToolCallID: "c1"}}
		})},
		{"result unknown block", core.EventToolResult, result(func(m *core.Message) {
			m.Content = core.Content{&core.UnknownBlock{Type: "tool-result", Raw: json.RawMessage(`{"type":"tool-result","toolCallId":"c1","content":[]}`)}}
		})},
		{"message as assistant data", core.EventAssistantMessage, user(nil)},
	}
	errText := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := core.Snapshot(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			opts := core.AppendOptions{SurfaceOp: core.AppendOp()}
			_, typedErr := newMemSession(t).Append(ctx, tc.typ, tc.data, opts)
			_, jsonErr := newMemSession(t).Append(ctx, tc.typ, raw, opts)
			if errText(typedErr) != errText(jsonErr) {
				t.Errorf("typed data: %s\nits JSON:   %s", errText(typedErr), errText(jsonErr))
			}
			valid := strings.HasSuffix(tc.name, " ok") || strings.HasSuffix(tc.name, " pointer") ||
				strings.HasSuffix(tc.name, " nil content") || strings.HasSuffix(tc.name, "nil block content") ||
				strings.HasSuffix(tc.name, "unknown block")
			if valid != (typedErr == nil) {
				t.Errorf("typed data accepted = %t, want %t (%v)", typedErr == nil, valid, typedErr)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
