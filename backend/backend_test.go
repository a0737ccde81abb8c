package backend_test

import (
	"slices"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/store"
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
	f.Publish(store.Commit{SessionID: "a", Events: []core.Event{{Seq: 7}}})
	f.Publish(store.Commit{SessionID: "b", Replaced: true, Events: []core.Event{{Seq: 0}, {Seq: 1}}})
	f.Publish(store.Commit{SessionID: "c", Created: true})
	if !slices.Equal(appended, []string{"a", "c"}) || !slices.Equal(replaced, []string{"b"}) {
		t.Errorf("OnCommit got %v, OnReplace got %v; want [a c] and [b]", appended, replaced)
	}
	removeReplace()
	removeReplace() // idempotent
	f.Publish(store.Commit{SessionID: "d", Replaced: true})
	if len(replaced) != 1 {
		t.Errorf("a removed function was called: %v", replaced)
	}
}
