package pgstore

import (
	"context"
	"testing"

	"prism/store/storetest"
)

// TestSearchCardsMigrationNumbersFiledCards: migration 0016 numbers the
// cards a database filed before it (the column dropped and the migration
// run again on reopening), as the index numbers them when it files them.
func TestSearchCardsMigrationNumbersFiledCards(t *testing.T) {
	ctx := context.Background()
	st, url := newTestStore(t, Options{})
	storetest.AppendReusedCallIDs(t, st)
	for _, q := range []string{"ALTER TABLE search_docs DROP COLUMN card", "DELETE FROM migrations WHERE name = '0016_search_cards.sql'"} {
		if _, err := st.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()
	st = openAt(t, url, Options{})
	var numbered int
	if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM search_docs WHERE card > 1").Scan(&numbered); err != nil {
		t.Fatal(err)
	}
	if numbered != 3 {
		t.Errorf("%d cards numbered above 1 after the migration, want 3 (two of call f, one of e)", numbered)
	}
	storetest.CheckSearchIndex(t, st)
}
