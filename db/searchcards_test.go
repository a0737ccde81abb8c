package db

import (
	"context"
	"path/filepath"
	"testing"

	"prism/store/storetest"
)

// TestSearchCardsMigrationNumbersFiledCards: migration 0018 numbers the
// cards a database filed before it (the column dropped and the migration
// run again on reopening), as the index numbers them when it files them.
func TestSearchCardsMigrationNumbersFiledCards(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	storetest.AppendReusedCallIDs(t, st)
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE search_docs DROP COLUMN card", "DELETE FROM migrations WHERE name = '0018_search_cards.sql'"} {
		if _, err := st.wdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var numbered int
	if err := st.rdb.QueryRow("SELECT count(*) FROM search_docs WHERE card > 1").Scan(&numbered); err != nil {
		t.Fatal(err)
	}
	if numbered != 3 {
		t.Errorf("%d cards numbered above 1 after the migration, want 3 (two of call f, one of e)", numbered)
	}
	storetest.CheckSearchIndex(t, st)
}
