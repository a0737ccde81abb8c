package db

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/core"
)

// TestImport_concurrencyLimit: past Options.MaxImports an import is
// refused at once with a busy error (UNAVAILABLE, with a retry delay);
// the slot frees when an import ends.
func TestImport_concurrencyLimit(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t, func(o *Options) { o.MaxImports = 1 })
	data, err := os.ReadFile(filepath.Join(fixtures, "basic/session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// An upload that is still arriving holds the only slot.
	pr, pw := io.Pipe()
	first := make(chan error, 1)
	go func() {
		_, err := st.Import(ctx, "slow.jsonl", pr, -1)
		first <- err
	}()
	if _, err := pw.Write(data[:10]); err != nil { // the importer is reading: it holds the slot
		t.Fatal(err)
	}
	_, err = st.ImportFile(ctx, filepath.Join(fixtures, "crashed/session.jsonl"))
	var busy *BusyError
	if !errors.As(err, &busy) || core.ErrorCode(err) != core.CodeUnavailable || busy.RetryAfter() <= 0 ||
		!strings.Contains(err.Error(), "concurrent imports") {
		t.Fatalf("import past the limit = %v, want a BusyError with a retry delay", err)
	}
	if _, err := pw.Write(data[10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-first; err != nil {
		t.Fatalf("the slow import: %v", err)
	}
	mustImport(t, st, filepath.Join(fixtures, "crashed/session.jsonl")) // the slot is free again
}

// TestImport_watcherWaitsForASlot: the watcher does not fail while uploads
// hold every slot; it waits and then ingests.
func TestImport_watcherWaitsForASlot(t *testing.T) {
	st := newTestStore(t, func(o *Options) { o.MaxImports = 1 })
	release, err := st.acquireImport(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := st.acquireImport(ctx, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a taken slot = %v, want the context's end", err)
	}
	release()
	again, err := st.acquireImport(context.Background(), true)
	if err != nil {
		t.Fatalf("waiting for a free slot: %v", err)
	}
	again()
}

// zipEntry returns one entry of a zip file.
func zipEntry(t *testing.T, path, name string) []byte {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	rc, err := zr.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImport_orphanSubagentRefused: a subagent log whose parent is neither
// in the file nor stored is refused with an error naming both, and
// nothing is imported; once the parent is stored it imports.
func TestImport_orphanSubagentRefused(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	exportZip := filepath.Join(fixtures, "export/session-export.zip")
	child := filepath.Join(t.TempDir(), "child.jsonl")
	if err := os.WriteFile(child, zipEntry(t, exportZip, "subagents/"+childID+"/session.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := st.ImportFile(ctx, child)
	if err == nil || core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), childID) ||
		!strings.Contains(err.Error(), "subagent of session "+parentID) || !strings.Contains(err.Error(), "nothing was imported") {
		t.Fatalf("orphan subagent import = %v, want an INVALID error naming the child and its missing parent", err)
	}
	if _, err := st.Session(ctx, childID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("the refused subagent was stored: %v", err)
	}
	mustImport(t, st, exportZip)
	if res := mustImport(t, st, child); len(res) != 1 || res[0].Outcome != ImportUnchanged {
		t.Errorf("the subagent after its parent = %+v, want unchanged", res)
	}
}

// TestRepair_removesSessionsThatNeverLoggedATurn: a live session created
// but killed before its first event (never acknowledged, nothing to show)
// is removed at startup rather than left idle in the list; sessions with
// events and imported ones are not touched.
func TestRepair_removesSessionsThatNeverLoggedATurn(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	mustCreate(t, st, "never-started")
	mustCreate(t, st, "started")
	if err := st.AppendEvents(ctx, "started", turnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	headerOnly := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(headerOnly, []byte(`{"type":"session","version":0,"id":"imported-empty","createdAt":1764500000000}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustImport(t, st, headerOnly)
	got, err := st.RepairOpenTurns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "never-started" {
		t.Errorf("RepairOpenTurns = %q, want [never-started]", got)
	}
	if _, err := st.Session(ctx, "never-started"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("the session that never logged a turn: %v, want it removed", err)
	}
	for _, id := range []string{"started", "imported-empty"} {
		if info, err := st.Session(ctx, id); err != nil || info.Status != StatusIdle {
			t.Errorf("%s: status %q (%v), want it untouched (idle)", id, info.Status, err)
		}
	}
	// Its id is free again, and a second pass has nothing left to do.
	mustCreate(t, st, "never-started")
	if err := st.AppendEvents(ctx, "never-started", turnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	if again, err := st.RepairOpenTurns(ctx); err != nil || len(again) != 0 {
		t.Errorf("second RepairOpenTurns = %q, %v; want nothing to do", again, err)
	}
}

// TestRepair_removedSessionLeavesNoSearchRows: removing a session that
// never logged a turn removes its search document's terms too (search_fts
// has no foreign key to cascade), so the next document, which may take the
// freed id, is filed — a stale row made the next session's creation fail
// ("index seq -1: constraint failed") in the crash test.
func TestRepair_removedSessionLeavesNoSearchRows(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	mustCreate(t, st, "kept")
	mustCreate(t, st, "never-started") // the newest document: its id is reused next
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
	mustCreate(t, st, "next")
	if err := st.AppendEvents(ctx, "next", turnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	if hits := searchAll(t, st, "session:next kind:session"); len(hits) != 1 {
		t.Errorf("the next session's own document: %d hits, want 1", len(hits))
	}
}
