package db

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"prism/store"
)

// setMaxPages sets the writer connection's PRAGMA max_page_count: a
// transaction that would grow the database past it fails with a real
// SQLITE_FULL. It returns the database's page count before.
func setMaxPages(t *testing.T, st *Store, max int64) (pages int64) {
	t.Helper()
	err := st.write(context.Background(), func(t *wtx) error {
		if err := t.tx.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
			return err
		}
		_, err := t.tx.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", max))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// TestImportFilesStoreFailureEndsTheBatch: a failure that is the store's,
// not a file's — a real SQLITE_FULL, the database held to a few pages
// more than it has (PRAGMA max_page_count), in a batch's first file or
// midway through it, or the database read-only (PRAGMA query_only) — ends
// the batch at once: it runs once (not again once per file, as it did when
// each file in turn failed and was isolated), no file is blamed for it,
// every file of the batch is reported not imported with the store's error
// (store.StoreFailed), nothing of the batch is kept, the files committed
// before it are kept, and the store imports the same files once it works
// again.
func TestImportFilesStoreFailureEndsTheBatch(t *testing.T) {
	for _, c := range []struct {
		name  string
		room  float64 // in files' pages; < 0: read-only instead
		runs  int64   // how many times the batch's writes run (attemptBatch)
		cause string
	}{
		{"full at the first file", 0.1, 1, "database or disk is full"},
		{"full midway", 1.5, 1, "database or disk is full"},
		// Refused at BEGIN, before any write.
		{"read-only", -1, 0, "begin write transaction: attempt to write a readonly database"},
	} {
		t.Run(c.name, func(t *testing.T) { testImportFilesStoreFailure(t, c.room, c.runs, c.cause) })
	}
}

func testImportFilesStoreFailure(t *testing.T, room float64, runs int64, cause string) {
	ctx := context.Background()
	paths := batchFiles(t, t.TempDir(), 10)
	o := store.ImportOptions{FileIndex: true}
	st := newTestStore(t)
	empty := setMaxPages(t, st, 1<<30)
	for i, x := range st.ImportFilesWith(ctx, paths[:2], o) {
		if x.Err != nil {
			t.Fatalf("file %d before the failure: %v", i, x.Err)
		}
	}
	pages := setMaxPages(t, st, 1<<30)
	if room >= 0 {
		setMaxPages(t, st, pages+int64(room*float64(pages-empty)/2))
	} else {
		setQueryOnly(t, st, true)
	}
	attempts := st.batchAttempts.Load()
	out := st.ImportFilesWith(ctx, paths[2:], o)
	if n := st.batchAttempts.Load() - attempts; n != runs {
		t.Errorf("the batch's writes ran %d times, want %d: the store's failure is no file's", n, runs)
	}
	if len(out) != len(paths)-2 {
		t.Fatalf("%d outcomes for %d files", len(out), len(paths)-2)
	}
	for i, x := range out {
		err := x.Err
		var failed *store.StoreFailed
		if !errors.As(err, &failed) || x.Results != nil {
			t.Errorf("file %d: %+v, %v; want it not imported, with a *store.StoreFailed", i, x.Results, err)
			continue
		}
		if !strings.Contains(err.Error(), cause) {
			t.Errorf("file %d: %v; want the store's error (%s)", i, err, cause)
		}
		for _, p := range paths[2:] {
			if strings.Contains(err.Error(), filepath.Base(p)) {
				t.Errorf("file %d: %v; the store's failure blames %s", i, err, filepath.Base(p))
			}
		}
	}
	if n := countRows(t, st, "sessions"); n != 2 {
		t.Errorf("%d sessions after the failed batch, want the 2 committed before it", n)
	}
	if n := countRows(t, st, "events"); n != 2*48 {
		t.Errorf("%d events after the failed batch, want the %d of the 2 sessions committed before it", n, 2*48)
	}
	for _, id := range []string{"b0", "b1"} {
		if l, err := st.LoadSession(ctx, id); err != nil || len(l.Events) != 48 {
			t.Errorf("session %s committed before the failure: %v", id, err)
		}
	}
	if room < 0 {
		setQueryOnly(t, st, false)
	}
	setMaxPages(t, st, 1<<30)
	for i, x := range st.ImportFilesWith(ctx, paths[2:], o) {
		if x.Err != nil || len(x.Results) != 1 || x.Results[0].Outcome != store.ImportCreated {
			t.Errorf("file %d once the store works: %+v, %v; want its session created", i, x.Results, x.Err)
		}
	}
	if n := countRows(t, st, "sessions"); n != len(paths) {
		t.Errorf("%d sessions in the end, want %d", n, len(paths))
	}
	fullIndexRows(t, st) // every document has its FTS row
}

// setQueryOnly sets the writer connection's PRAGMA query_only: while on,
// every write fails with SQLITE_READONLY.
func setQueryOnly(t *testing.T, st *Store, on bool) {
	t.Helper()
	v := 0
	if on {
		v = 1
	}
	if _, err := st.wdb.Exec(fmt.Sprintf("PRAGMA query_only = %d", v)); err != nil {
		t.Fatal(err)
	}
}

// TestImportFilesCallersCancelIsNoStoreFailure: a batch whose caller's
// context ends while it waits for its turn (ImportOptions.Turn) reports
// the cancellation as it is, not as the store's failure.
func TestImportFilesCallersCancelIsNoStoreFailure(t *testing.T) {
	paths := batchFiles(t, t.TempDir(), 3)
	st := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	o := store.ImportOptions{FileIndex: true, Turn: func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}
	for i, x := range st.ImportFilesWith(ctx, paths, o) {
		var failed *store.StoreFailed
		if !errors.Is(x.Err, context.Canceled) || errors.As(x.Err, &failed) || x.Results != nil {
			t.Errorf("file %d: %+v, %v; want context.Canceled, not the store's failure", i, x.Results, x.Err)
		}
	}
	if n := countRows(t, st, "sessions"); n != 0 {
		t.Errorf("%d sessions after the cancelled batch", n)
	}
}
