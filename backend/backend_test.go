package backend_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/db"
	"prism/views"
)

// TestFeedRoutesReplacedLogs: a commit that replaced a session's whole log
// (a rewritten watched file) reaches the OnReplace functions — web's hubs
// then reload the session — and not the OnCommit ones, whose events must
// continue the log they were given.
func TestFeedRoutesReplacedLogs(t *testing.T) {
	f := &backend.Feed{}
	var appended, replaced []string
	defer f.OnCommit(func(id string, _ []core.Event) { appended = append(appended, id) })()
	removeReplace := f.OnReplace(func(id string) { replaced = append(replaced, id) })
	f.Publish(db.Commit{SessionID: "a", Events: []core.Event{{Seq: 7}}})
	f.Publish(db.Commit{SessionID: "b", Replaced: true, Events: []core.Event{{Seq: 0}, {Seq: 1}}})
	f.Publish(db.Commit{SessionID: "c", Created: true})
	if !slices.Equal(appended, []string{"a", "c"}) || !slices.Equal(replaced, []string{"b"}) {
		t.Errorf("OnCommit got %v, OnReplace got %v; want [a c] and [b]", appended, replaced)
	}
	removeReplace()
	removeReplace() // idempotent
	f.Publish(db.Commit{SessionID: "d", Replaced: true})
	if len(replaced) != 1 {
		t.Errorf("a removed function was called: %v", replaced)
	}
}

// TestCallEventsSelectsTheCallContext: the store's selection of one call's
// events (its call-id column and the context types) is exactly
// views.CallContext over the whole log, for every call of the demo-like
// log below.
func TestCallEventsSelectsTheCallContext(t *testing.T) {
	ctx := context.Background()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "s.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := coretest.NewBuilder(1000)
	b.TurnStart().StepStart().User("go").Assistant("", [3]string{"c1", "read", `{}`}, [3]string{"c2", "bash", `{}`})
	b.Call("c1", "read", `{}`).Call("c2", "bash", `{}`)
	b.Add(core.EventApprovalAsked, map[string]any{"id": "ap", "callId": "c2"}, nil)
	b.Add(core.EventApprovalDecided, map[string]any{"id": "ap", "outcome": "allowed-once"}, nil)
	b.Result("c1", "one", false, nil, nil).Result("c2", "two", true, nil, nil).StepEnd()
	b.StepStart().Call("c1", "read", `{}`).StepEnd().TurnEnd(core.TurnCompleted)
	b.TurnStart().StepStart().Assistant("", [3]string{"c3", "note", `{}`}).Repair()
	h := core.SessionHeader{ID: "s", CreatedAt: 1000}
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "s", b.Events); err != nil {
		t.Fatal(err)
	}
	src := backend.Source{Store: st}
	for _, id := range []string{"c1", "c2", "c3", "nope"} {
		_, got, err := src.CallEvents(ctx, "s", id)
		if err != nil {
			t.Fatal(err)
		}
		var gotSeqs, wantSeqs []int64
		for _, e := range got {
			gotSeqs = append(gotSeqs, e.Seq)
		}
		for _, e := range views.CallContext(b.Events, id) {
			wantSeqs = append(wantSeqs, e.Seq)
		}
		if !slices.Equal(gotSeqs, wantSeqs) {
			t.Errorf("%s: the store selects %v, views.CallContext %v", id, gotSeqs, wantSeqs)
		}
	}
	if _, _, err := src.CallEvents(ctx, "missing", "c1"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
}
