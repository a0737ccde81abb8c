package db

import (
	"context"
	"errors"
	"testing"
	"time"

	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// TestImport_watcherWaitsForASlot: the watcher does not fail while uploads
// hold every slot; it waits and then ingests.
func TestImport_watcherWaitsForASlot(t *testing.T) {
	st := newTestStore(t, func(o *Options) { o.MaxImports = 1 })
	release, err := st.AcquireImport(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := st.AcquireImport(ctx, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a taken slot = %v, want the context's end", err)
	}
	release()
	again, err := st.AcquireImport(context.Background(), true)
	if err != nil {
		t.Fatalf("waiting for a free slot: %v", err)
	}
	again()
}

// TestRepair_removedSessionLeavesNoSearchRows: removing a session that
// never logged a turn removes its search document's terms too (search_fts
// has no foreign key to cascade), so the next document, which may take the
// freed id, is filed — a stale row made the next session's creation fail
// ("index seq -1: constraint failed") in the crash test.
func TestRepair_removedSessionLeavesNoSearchRows(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	storetest.MustCreate(t, st, "kept")
	storetest.MustCreate(t, st, "never-started") // the newest document: its id is reused next
	if got, err := st.RepairOpenTurns(ctx); err != nil || len(got) != 2 {
		t.Fatalf("RepairOpenTurns = %q, %v; want both empty sessions removed", got, err)
	}
	var orphans int
	if err := st.rdb.QueryRowContext(ctx, "SELECT count(*) FROM search_fts WHERE docid NOT IN (SELECT id FROM search_docs)").Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Errorf("%d search rows of removed sessions left behind", orphans)
	}
	storetest.MustCreate(t, st, "next")
	if err := st.AppendEvents(ctx, "next", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	q, err := search.Parse("session:next kind:session", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if page, err := st.Search(ctx, q, store.SearchOptions{}); err != nil || len(page.Hits) != 1 {
		t.Errorf("the next session's own document: %+v, %v; want 1 hit", page.Hits, err)
	}
}
