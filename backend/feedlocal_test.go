package backend_test

import (
	"testing"

	"prism/backend"
	"prism/core"
	"prism/store"
)

// TestFeedOnLocalCommit: OnLocalCommit functions get only this node's own
// commits (store.Commit.Local); OnCommit functions get every commit.
func TestFeedOnLocalCommit(t *testing.T) {
	var f backend.Feed
	var all, local []int64
	f.OnCommit(func(_ string, evs []core.Event) {
		for _, e := range evs {
			all = append(all, e.Seq)
		}
	})
	f.OnLocalCommit(func(_ string, evs []core.Event) {
		for _, e := range evs {
			local = append(local, e.Seq)
		}
	})
	f.Publish(store.Commit{SessionID: "s", Created: true, Events: []core.Event{{Seq: 0}, {Seq: 1}}})
	f.Publish(store.Commit{SessionID: "s", Events: []core.Event{{Seq: 2}}, Local: true})
	f.Publish(store.Commit{SessionID: "s", Events: []core.Event{{Seq: 3}}})
	f.Publish(store.Commit{SessionID: "s", Replaced: true, Local: true})
	if len(all) != 4 || len(local) != 1 || local[0] != 2 {
		t.Fatalf("OnCommit got %v, OnLocalCommit %v; want 0-3 and [2]", all, local)
	}
}
