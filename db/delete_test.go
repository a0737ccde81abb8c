package db

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
)

func TestDeleteSession_removesEverything(t *testing.T) {
	ctx := context.Background()
	var commits []Commit
	st := newTestStore(t, func(o *Options) { o.Committed = func(c Commit) { commits = append(commits, c) } })
	mustImport(t, st, filepath.Join(fixtures, "export/session-export.zip")) // a parent and its subagent
	mustImport(t, st, filepath.Join(fixtures, "basic/session.jsonl"))       // a bystander
	for _, id := range []string{parentID, childID, basicID} {
		if _, _, err := st.CreateShare(ctx, share.Spec{SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	keep := snapshotOf(t, st, basicID)
	commits = nil

	d, err := st.DeleteSession(ctx, parentID)
	if err != nil {
		t.Fatal(err)
	}
	if d.SessionID != parentID || !slices.Equal(d.Subagents, []string{childID}) || d.Shares != 2 || d.Events == 0 {
		t.Errorf("DeleteSession = %+v, want the parent, its subagent and their 2 links", d)
	}
	for _, id := range []string{parentID, childID} {
		if _, err := st.Session(ctx, id); core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("Session(%s) after delete = %v, want not found", id, err)
		}
		for _, table := range []string{"events", "shares"} {
			var n int
			st.rdb.QueryRow("SELECT count(*) FROM "+table+" WHERE session_id = ?", id).Scan(&n)
			if n != 0 {
				t.Errorf("%d %s rows of %s left", n, table, id)
			}
		}
	}
	if got := snapshotOf(t, st, basicID); got != keep {
		t.Errorf("the other session changed:\n%s\n%s", keep, got)
	}
	var deleted []string
	for _, c := range commits {
		if c.Deleted {
			deleted = append(deleted, c.SessionID)
		}
	}
	slices.Sort(deleted)
	if want := []string{parentID, childID}; !slices.Equal(deleted, sorted(want)) {
		t.Errorf("deleted commits = %v, want %v", deleted, want)
	}
	if _, err := st.DeleteSession(ctx, parentID); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("second delete = %v, want not found", err)
	}
	// The id is free again: the writer forgot the deleted session.
	mustImport(t, st, filepath.Join(fixtures, "export/session-export.zip"))
	if info, err := st.Session(ctx, parentID); err != nil || info.Events == 0 {
		t.Errorf("re-import after delete: %+v, %v", info, err)
	}
}

func TestDeleteEndedBefore(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	mk := func(id string, lastTime int64, end bool) {
		mustCreate(t, st, id)
		events := turnEvents(0, 1, false)
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
	page, _ := st.ListSessions(ctx, ListOptions{})
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

func snapshotOf(t *testing.T, st *Store, id string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(snapshot(t, st), "\n") {
		if strings.HasPrefix(line, id+" ") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// A deleted session leaves nothing in the search index: no hit names it or
// its subagent, its documents and their full-text rows are gone, and the
// other session's hits are as they were.
func TestDeleteSession_removesSearchIndex(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	mustImport(t, st, filepath.Join(fixtures, "export/session-export.zip")) // a parent and its subagent
	mustImport(t, st, filepath.Join(fixtures, "basic/session.jsonl"))       // a bystander
	const everything = "after:2000-01-01"
	hitsBy := func() map[string]int {
		n := map[string]int{}
		for _, h := range searchAll(t, st, everything) {
			n[h.SessionID]++
		}
		return n
	}
	before := hitsBy()
	for _, id := range []string{parentID, childID, basicID} {
		if before[id] == 0 {
			t.Fatalf("before delete, %q finds nothing of session %s (hits %v): the test proves nothing", everything, id, before)
		}
	}
	if _, err := st.DeleteSession(ctx, parentID); err != nil {
		t.Fatal(err)
	}
	after := hitsBy()
	if want := map[string]int{basicID: before[basicID]}; !maps.Equal(after, want) {
		t.Errorf("hits by session after deleting %s = %v, want %v", parentID, after, want)
	}
	for _, id := range []string{parentID, childID} {
		for _, table := range []string{"search_docs", "search_sessions"} {
			var n int
			if err := st.rdb.QueryRow("SELECT count(*) FROM "+table+" WHERE session_id = ?", id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d %s rows of %s left", n, table, id)
			}
		}
	}
	var orphans int
	if err := st.rdb.QueryRow("SELECT count(*) FROM search_fts WHERE docid NOT IN (SELECT id FROM search_docs)").Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Errorf("%d search_fts rows whose document is gone", orphans)
	}
}
