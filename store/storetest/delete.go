package storetest

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/share"
	"prism/store"
)

// testDeleteSessionRemovesEverything: a session goes with its subagents,
// events and share links, and the deletion is a commit; nothing else
// changes, and the id is free again.
func testDeleteSessionRemovesEverything(t *testing.T, e Engine) {
	ctx := context.Background()
	deletedCommits := make(chan string, 16)
	st, _ := e.Open(t, Options{Committed: func(c store.Commit) {
		if c.Deleted {
			deletedCommits <- c.SessionID
		}
	}})
	MustImport(t, st, filepath.Join(Fixtures, "export/session-export.zip")) // a parent and its subagent
	MustImport(t, st, filepath.Join(Fixtures, "basic/session.jsonl"))       // a bystander
	for _, id := range []string{ParentID, ChildID, basicID} {
		if _, _, err := st.CreateShare(ctx, share.Spec{SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	keep := e.snapshotOf(t, st, basicID)

	d, err := st.DeleteSession(ctx, ParentID)
	if err != nil {
		t.Fatal(err)
	}
	if d.SessionID != ParentID || !slices.Equal(d.Subagents, []string{ChildID}) || d.Shares != 2 || d.Events == 0 {
		t.Errorf("DeleteSession = %+v, want the parent, its subagent and their 2 links", d)
	}
	for _, id := range []string{ParentID, ChildID} {
		if _, err := st.Session(ctx, id); core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("Session(%s) after delete = %v, want not found", id, err)
		}
		for _, table := range []string{"events", "shares"} {
			if n := e.Count(t, st, "SELECT count(*) FROM "+table+" WHERE session_id = '"+id+"'"); n != 0 {
				t.Errorf("%d %s rows of %s left", n, table, id)
			}
		}
	}
	if got := e.snapshotOf(t, st, basicID); got != keep {
		t.Errorf("the other session changed:\n%s\n%s", keep, got)
	}
	// The deletions are commits (delivered after them: wait for both).
	var deleted []string
	for len(deleted) < 2 {
		select {
		case id := <-deletedCommits:
			deleted = append(deleted, id)
		case <-time.After(10 * time.Second): // a failure guard, not synchronization
			t.Fatalf("deleted commits: only %v", deleted)
		}
	}
	slices.Sort(deleted)
	if want := []string{ParentID, ChildID}; !slices.Equal(deleted, sorted(want)) {
		t.Errorf("deleted commits = %v, want %v", deleted, want)
	}
	if _, err := st.DeleteSession(ctx, ParentID); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("second delete = %v, want not found", err)
	}
	// The id is free again: the writer forgot the deleted session.
	MustImport(t, st, filepath.Join(Fixtures, "export/session-export.zip"))
	if info, err := st.Session(ctx, ParentID); err != nil || info.Events == 0 {
		t.Errorf("re-import after delete: %+v, %v", info, err)
	}
}

// testDeleteEndedBefore: retention deletes the ended sessions older than
// the bound, never a running one.
func testDeleteEndedBefore(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	mk := func(id string, lastTime int64, end bool) {
		MustCreate(t, st, id)
		events := TurnEvents(0, 1, false)
		if !end {
			events = events[:3] // turn still open: running
		}
		for i := range events {
			events[i].Time = lastTime
		}
		if err := st.AppendEvents(ctx, id, events); err != nil {
			t.Fatal(err)
		}
	}
	now := time.UnixMilli(1_800_000_000_000)
	day := 24 * time.Hour
	mk("old-ended", now.Add(-40*day).UnixMilli(), true)
	mk("old-running", now.Add(-40*day).UnixMilli(), false)
	mk("new-ended", now.Add(-10*day).UnixMilli(), true)
	got, err := st.DeleteEndedBefore(ctx, now.Add(-30*day))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SessionID != "old-ended" {
		t.Fatalf("DeleteEndedBefore = %+v, want only old-ended", got)
	}
	page, _ := st.ListSessions(ctx, store.ListOptions{})
	var left []string
	for _, s := range page.Sessions {
		left = append(left, s.ID)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"new-ended", "old-running"}) {
		t.Errorf("left %v", left)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func (e Engine) snapshotOf(t *testing.T, st Store, id string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(e.snapshot(t, st), "\n") {
		if strings.HasPrefix(line, id+" ") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// A deleted session leaves nothing in the search index: no hit names it or
// its subagent, its documents and their full-text rows are gone, and the
// other session's hits are as they were.
func testDeleteSessionRemovesSearchIndex(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustImport(t, st, filepath.Join(Fixtures, "export/session-export.zip")) // a parent and its subagent
	MustImport(t, st, filepath.Join(Fixtures, "basic/session.jsonl"))       // a bystander
	const everything = "after:2000-01-01"
	hitsBy := func() map[string]int {
		n := map[string]int{}
		for _, h := range searchAll(t, st, everything) {
			n[h.SessionID]++
		}
		return n
	}
	before := hitsBy()
	for _, id := range []string{ParentID, ChildID, basicID} {
		if before[id] == 0 {
			t.Fatalf("before delete, %q finds nothing of session %s (hits %v): the test proves nothing", everything, id, before)
		}
	}
	if _, err := st.DeleteSession(ctx, ParentID); err != nil {
		t.Fatal(err)
	}
	after := hitsBy()
	if want := map[string]int{basicID: before[basicID]}; !maps.Equal(after, want) {
		t.Errorf("hits by session after deleting %s = %v, want %v", ParentID, after, want)
	}
	for _, id := range []string{ParentID, ChildID} {
		for _, table := range []string{"search_docs", "search_sessions"} {
			if n := e.Count(t, st, "SELECT count(*) FROM "+table+" WHERE session_id = '"+id+"'"); n != 0 {
				t.Errorf("%d %s rows of %s left", n, table, id)
			}
		}
	}
}
