package pgstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"prism/store"
	"prism/store/storetest"
)

// TestFanoutDeliversEachDeletionOnce drives the deliverer's step with the
// orders in which its hints can arrive when it runs late: a session this
// node created and deleted before the deliverer saw either (its NOTIFY, then
// its own commits), and a deletion heard first through its own NOTIFY and
// then through its own commit. Each deletion is delivered exactly once.
func TestFanoutDeliversEachDeletionOnce(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	storetest.MustImport(t, st, filepath.Join(storetest.Fixtures, "export/session-export.zip"))
	if _, err := st.DeleteSession(ctx, storetest.ParentID); err != nil {
		t.Fatal(err)
	}
	parent, child := storetest.ParentID, storetest.ChildID

	// A deliverer of its own (the store's runs beside it): same database,
	// its own cursors and callback.
	var got []store.Commit
	f := &fanout{st: &Store{opts: Options{Committed: func(c store.Commit) { got = append(got, c) }}, log: quietLogger(), pool: st.pool},
		seen: map[string]cursor{}, gone: map[string]bool{}}
	local := func(c store.Commit) hint { return hint{id: c.SessionID, local: &change{Commit: c, lastSeq: -1}} }
	deleted := func(cs []store.Commit) []string {
		var ids []string
		for _, c := range cs {
			if c.Deleted {
				ids = append(ids, c.SessionID)
			}
		}
		slices.Sort(ids)
		return ids
	}

	// Late: the import's NOTIFYs and commits and the deletion's commits
	// in one run.
	f.process(ctx, []hint{
		{id: parent, seq: 3}, {id: child, seq: 3},
		local(store.Commit{SessionID: parent, Created: true}), local(store.Commit{SessionID: child, Created: true}),
		local(store.Commit{SessionID: parent, Deleted: true}), local(store.Commit{SessionID: child, Deleted: true}),
	})
	if want := []string{parent, child}; !slices.Equal(deleted(got), sorted(want)) {
		t.Errorf("created and deleted in one run: deleted commits %v, want %v", deleted(got), want)
	}

	// The deletion's NOTIFY in one run, its commit in the next.
	got = nil
	f = &fanout{st: f.st, seen: map[string]cursor{parent: {seq: 3}}, gone: map[string]bool{}}
	f.process(ctx, []hint{{id: parent, deleted: true}})
	f.process(ctx, []hint{local(store.Commit{SessionID: parent, Deleted: true})})
	if want := []string{parent}; !slices.Equal(deleted(got), want) {
		t.Errorf("NOTIFY then commit: deleted commits %v, want %v once", deleted(got), want)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
