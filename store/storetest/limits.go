package storetest

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/store"
)

// testImportConcurrencyLimit: past Options.MaxImports an import is
// refused at once with a busy error (UNAVAILABLE, with a retry delay);
// the slot frees when an import ends.
func testImportConcurrencyLimit(t *testing.T, e Engine) {
	ctx := context.Background()
	st, _ := e.Open(t, Options{MaxImports: 1})
	data, err := os.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl"))
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
	_, err = st.ImportFile(ctx, filepath.Join(Fixtures, "crashed/session.jsonl"))
	var busy *store.BusyError
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
	MustImport(t, st, filepath.Join(Fixtures, "crashed/session.jsonl")) // the slot is free again
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

// testImportOrphanSubagentRefused: a subagent log whose parent is neither
// in the file nor stored is refused with an error naming both, and
// nothing is imported; once the parent is stored it imports.
func testImportOrphanSubagentRefused(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	exportZip := filepath.Join(Fixtures, "export/session-export.zip")
	child := filepath.Join(t.TempDir(), "child.jsonl")
	if err := os.WriteFile(child, zipEntry(t, exportZip, "subagents/"+ChildID+"/session.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := st.ImportFile(ctx, child)
	if err == nil || core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), ChildID) ||
		!strings.Contains(err.Error(), "subagent of session "+ParentID) || !strings.Contains(err.Error(), "nothing was imported") {
		t.Fatalf("orphan subagent import = %v, want an INVALID error naming the child and its missing parent", err)
	}
	if _, err := st.Session(ctx, ChildID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("the refused subagent was stored: %v", err)
	}
	MustImport(t, st, exportZip)
	if res := MustImport(t, st, child); len(res) != 1 || res[0].Outcome != store.ImportUnchanged {
		t.Errorf("the subagent after its parent = %+v, want unchanged", res)
	}
}

// testRepairRemovesSessionsThatNeverLoggedATurn: a live session created
// but killed before its first event (never acknowledged, nothing to show)
// is removed at startup rather than left idle in the list; sessions with
// events and imported ones are not touched.
func testRepairRemovesSessionsThatNeverLoggedATurn(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	MustCreate(t, st, "never-started")
	MustCreate(t, st, "started")
	if err := st.AppendEvents(ctx, "started", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	headerOnly := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(headerOnly, []byte(`{"type":"session","version":0,"id":"imported-empty","createdAt":1764500000000}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	MustImport(t, st, headerOnly)
	// Repair runs when a store opens after a crash: the process that
	// created the sessions is gone (and with it any claim it held).
	st.Close()
	st = reopen(Options{})
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
		if info, err := st.Session(ctx, id); err != nil || info.Status != core.StatusIdle {
			t.Errorf("%s: status %q (%v), want it untouched (idle)", id, info.Status, err)
		}
	}
	// Its id is free again, and a second pass has nothing left to do.
	MustCreate(t, st, "never-started")
	if err := st.AppendEvents(ctx, "never-started", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	if again, err := st.RepairOpenTurns(ctx); err != nil || len(again) != 0 {
		t.Errorf("second RepairOpenTurns = %q, %v; want nothing to do", again, err)
	}
}
