package storetest

import (
	"context"
	"testing"

	"prism/core"
)

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

// testSearchTakesTheAppendedWords: the search index files the words a
// session hands over with an event's facts, not a decode of its data
// (issue 16: one decode fewer per append). Here the words are another
// call's, and the index holds them.
func testSearchTakesTheAppendedWords(t *testing.T, e Engine) {
	ctx := context.Background()
	tap := &factsTap{}
	sess, err := core.NewSession(ctx, Header("tap"), core.SessionOptions{Store: tap, Logger: quiet()})
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
	st := e.open(t)
	if err := st.CreateSession(ctx, Header("s")); err != nil {
		t.Fatal(err)
	}
	plain := Ev(0, core.EventToolCall, `{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}`)
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
