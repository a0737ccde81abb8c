package storetest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/notes"
	"prism/sources/dsh"
	"prism/store"
)

// zipEntries reads a zip's entries by name.
func zipEntries(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name], err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// noteJSON is a session's notes as JSON lines (removed ones included).
func noteJSON(t *testing.T, st Store, s string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range mustNotes(t, st, s, notes.Query{Removed: true}) {
		js, _ := json.Marshal(n)
		b.Write(js)
		b.WriteByte('\n')
	}
	return b.String()
}

// testNotesRoundTripThroughAnExportZip: store.ExportZip writes a session
// and its subagent in dsh's export layout, each log the bare one Export
// writes, plus notes.jsonl; importing the zip into another store brings
// back both logs and every note (a removed one, a session's, a child's)
// as they were; importing it again adds nothing. A zip whose notes.jsonl
// holds a note its kind refuses is refused whole, naming the line, and
// nothing of it is stored.
func testNotesRoundTripThroughAnExportZip(t *testing.T, e Engine) {
	ctx := context.Background()
	src := e.open(t)
	if _, _, err := src.SyncLog(ctx, Header("p"), TurnEvents(0, 1, false), store.SourceImport, false); err != nil {
		t.Fatal(err)
	}
	child := Header("k")
	one := int64(1)
	child.ParentSession, child.Origin, child.DelegationDepth = "p", core.OriginSubagent, &one // a subagent: origin "subagent" marks a child
	if _, _, err := src.SyncLog(ctx, child, TurnEvents(0, 2, true), store.SourceImport, false); err != nil {
		t.Fatal(err)
	}
	mustPut(t, src, label("p", "call_1", `{"label":"wrong","score":0.5,"note":"see *this*"}`))
	gone := mustPut(t, src, label("p", "call_1", `{"label":"slow"}`))
	if _, err := src.RemoveNote(ctx, "p", gone.ID); err != nil {
		t.Fatal(err)
	}
	mustPut(t, src, label("p", "", `{"label":"good"}`))
	mustPut(t, src, label("k", "call_2", `{"label":"flaky"}`))

	var zipped bytes.Buffer
	if err := store.ExportZip(ctx, src, "p", &zipped); err != nil {
		t.Fatalf("ExportZip: %v", err)
	}
	entries := zipEntries(t, zipped.Bytes())
	for _, id := range []string{"p", "k"} {
		name := "session.jsonl"
		if id == "k" {
			name = "subagents/k/session.jsonl"
		}
		var bare bytes.Buffer
		if err := src.Export(ctx, id, &bare); err != nil {
			t.Fatal(err)
		}
		if got, ok := entries[name]; !ok || !bytes.Equal(got, bare.Bytes()) {
			t.Errorf("zip entry %s (present %v) is not the bare log Export writes", name, ok)
		}
	}
	if want := noteJSON(t, src, "p") + noteJSON(t, src, "k"); string(entries[dsh.NotesEntry]) != want {
		t.Errorf("notes.jsonl =\n%s\nwant\n%s", entries[dsh.NotesEntry], want)
	}

	dst := e.open(t)
	file := filepath.Join(t.TempDir(), "s.zip")
	if err := os.WriteFile(file, zipped.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := MustImport(t, dst, file)
	if len(res) != 2 || res[0].SessionID != "p" || res[0].Outcome != store.ImportCreated || res[1].SessionID != "k" {
		t.Fatalf("import of the zip = %+v, want p and k created", res)
	}
	for _, id := range []string{"p", "k"} {
		if got, want := noteJSON(t, dst, id), noteJSON(t, src, id); got != want {
			t.Errorf("notes of %s after the import:\n%s\nwant\n%s", id, got, want)
		}
	}
	if got := mustNotes(t, dst, "p", notes.Query{Kind: notes.KindLabel}); len(got) != 2 {
		t.Errorf("%d labels of p not removed after the import, want 2", len(got))
	}
	if res := MustImport(t, dst, file); res[0].Outcome != store.ImportUnchanged || noteJSON(t, dst, "p") != noteJSON(t, src, "p") {
		t.Errorf("importing the zip again = %+v, notes %s; want unchanged, the same notes", res, noteJSON(t, dst, "p"))
	}

	// A bad note refuses the whole zip.
	var bad bytes.Buffer
	zw := zip.NewWriter(&bad)
	for name, b := range entries {
		if name == dsh.NotesEntry {
			b = append(b, []byte(`{"id":"x1","session":"p","kind":"mood","atSeq":1,"time":1,"data":{}}`+"\n")...)
		}
		f, _ := zw.Create(name)
		_, _ = f.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := e.open(t)
	badFile := filepath.Join(t.TempDir(), "bad.zip")
	if err := os.WriteFile(badFile, bad.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := fresh.ImportFile(ctx, badFile)
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), dsh.NotesEntry) || !strings.Contains(err.Error(), `"mood"`) {
		t.Errorf("import of a zip with a bad note = %v, want invalid naming notes.jsonl and the kind", err)
	}
	if _, err := fresh.Session(ctx, "p"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("after the refused zip, session p: %v; want nothing imported", err)
	}
}
