package db

import (
	"context"
	"testing"

	"prism/core"
)

// TestAppendChecked: a session appends through AppendChecked and the list
// row counts what a decode would; the store takes the facts it is handed
// as given (it does not decode the data for them) yet checks every
// envelope as AppendEvents does.
func TestAppendChecked(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	sess, err := core.NewSession(ctx, header("s"), core.SessionOptions{Store: st, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	call, err := sess.Append(ctx, core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "n", Arguments: "{}"}, core.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, core.EventToolResult, core.ToolResultData{Turn: 1, Step: 1,
		Message: core.NewToolResultMessage("r1", "c1", core.Text("boom"), true)},
		core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{call.Seq}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := st.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if info.Calls != 1 || info.Results != 1 || info.Errors != 1 {
		t.Errorf("row: calls %d, results %d, errors %d; want 1, 1, 1", info.Calls, info.Results, info.Errors)
	}
	if evs, err := st.CallEvents(ctx, "s", "c1"); err != nil || len(evs) != 2 {
		t.Errorf("events of c1: %d, %v; want the call and its result", len(evs), err)
	}

	// The facts are taken as given: here they are another event's.
	other := ev(0, core.EventToolResult, `{"turn":1,"step":1,"message":{"id":"x","role":"user","content":[{"type":"tool-result","toolCallId":"cx","content":[],"isError":true}],"source":{"kind":"tool","callId":"cx"}}}`)
	lying := core.FactsOf(&other)
	plain := ev(2, core.EventToolResult, `{"turn":1,"step":1,"message":{"id":"y","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":false}],"source":{"kind":"tool","callId":"c1"}}}`)
	if err := st.AppendChecked(ctx, "s", []core.Event{plain}, []*core.EventFacts{&lying}); err != nil {
		t.Fatal(err)
	}
	if info, _ := st.Session(ctx, "s"); info.Errors != 2 {
		t.Errorf("errors %d after a result handed over as an error, want 2 (the facts, not a decode)", info.Errors)
	}
	if evs, _ := st.CallEvents(ctx, "s", "cx"); len(evs) != 1 {
		t.Errorf("events of cx: %d, want the one whose facts named it", len(evs))
	}

	// The envelope is checked as always.
	for _, tc := range []struct {
		name   string
		events []core.Event
		facts  []*core.EventFacts
		code   string
	}{
		{"seq gap", []core.Event{ev(9, core.EventStepEnd, `{"turn":1,"step":1}`)}, nil, core.CodeConflict},
		{"surfaceOp off the surface", []core.Event{{Type: core.EventStepEnd, Seq: 3, Data: []byte(`{}`), SurfaceOp: core.AppendOp()}}, nil, core.CodeInvalid},
		{"facts of another length", []core.Event{ev(3, core.EventStepEnd, `{}`)}, []*core.EventFacts{nil, nil}, core.CodeInvalid},
	} {
		if err := st.AppendChecked(ctx, "s", tc.events, tc.facts); core.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}

	// Nor is the data checked again: it is stored as handed over, where
	// AppendEvents compacts it (a walk of its own).
	spaced := `{"turn": 1, "step": 1}`
	if err := st.AppendChecked(ctx, "s", []core.Event{ev(3, core.EventStepEnd, spaced)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "s", []core.Event{ev(4, core.EventStepEnd, spaced)}); err != nil {
		t.Fatal(err)
	}
	stored, err := st.EventsAfter(ctx, "s", 2)
	if err != nil || len(stored) != 2 {
		t.Fatalf("events after 2: %d, %v; want 2", len(stored), err)
	}
	if got := string(stored[0].Data); got != spaced {
		t.Errorf("AppendChecked stored %s, want %s as handed over", got, spaced)
	}
	if got, want := string(stored[1].Data), `{"turn":1,"step":1}`; got != want {
		t.Errorf("AppendEvents stored %s, want %s (checked and compacted)", got, want)
	}
}

// factsTap is a CheckedStore that keeps the facts a session hands it.
type factsTap struct {
	facts []*core.EventFacts
}

func (s *factsTap) CreateSession(context.Context, core.SessionHeader) error { return nil }
func (s *factsTap) AppendEvents(context.Context, string, []core.Event) error {
	return nil
}
func (s *factsTap) AppendChecked(_ context.Context, _ string, _ []core.Event, facts []*core.EventFacts) error {
	s.facts = append(s.facts, facts...)
	return nil
}

// TestIndexTakesTheAppendedWords: the search index files the words a
// session hands over with an event's facts, not a decode of its data
// (issue 16: one decode fewer per append). Here the words are another
// call's, and the index holds them.
func TestIndexTakesTheAppendedWords(t *testing.T) {
	ctx := context.Background()
	tap := &factsTap{}
	sess, err := core.NewSession(ctx, header("tap"), core.SessionOptions{Store: tap, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "zebrafish", Arguments: `{"path":"okapi.txt"}`}, core.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(tap.facts) != 1 || tap.facts[0] == nil || tap.facts[0].Texts() == nil {
		t.Fatalf("the session handed over no words with the call's facts: %+v", tap.facts)
	}
	st := newTestStore(t)
	if err := st.CreateSession(ctx, header("s")); err != nil {
		t.Fatal(err)
	}
	plain := ev(0, core.EventToolCall, `{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}`)
	if err := st.AppendChecked(ctx, "s", []core.Event{plain}, tap.facts); err != nil {
		t.Fatal(err)
	}
	if hits := searchAll(t, st, "okapi"); len(hits) != 1 || hits[0].Seq != 0 {
		t.Errorf("okapi (the handed-over arguments): %+v, want the call", hits)
	}
	if hits := searchAll(t, st, "tool:zebrafish"); len(hits) != 1 {
		t.Errorf("tool:zebrafish (the handed-over name): %d hits, want 1", len(hits))
	}
	if hits := searchAll(t, st, "command"); len(hits) != 0 {
		t.Errorf("command (only in the stored data): %d hits, want none — the data was decoded again", len(hits))
	}
}
