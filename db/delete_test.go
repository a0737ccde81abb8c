package db

import (
	"context"
	"path/filepath"
	"testing"

	"prism/store/storetest"
)

// TestDeleteSession_leavesNoFTSRows: deleting a session removes its rows
// of search_fts, the FTS4 table no foreign key ties to search_docs
// (storetest's DeleteSessionRemovesSearchIndex checks the rest on both
// engines).
func TestDeleteSession_leavesNoFTSRows(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	storetest.MustImport(t, st, filepath.Join(fixtures, "export/session-export.zip"))
	storetest.MustImport(t, st, filepath.Join(fixtures, "basic/session.jsonl"))
	if _, err := st.DeleteSession(ctx, storetest.ParentID); err != nil {
		t.Fatal(err)
	}
	var orphans, left int
	if err := st.rdb.QueryRow("SELECT count(*) FROM search_fts WHERE docid NOT IN (SELECT id FROM search_docs)").Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if err := st.rdb.QueryRow("SELECT count(*) FROM search_fts").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || left == 0 {
		t.Errorf("%d search_fts rows whose document is gone (%d left in all), want none (and the other session's)", orphans, left)
	}
}
