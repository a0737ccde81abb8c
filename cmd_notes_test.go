package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core/notes"
	"prism/db"
	"prism/store/storetest"
)

// TestCLI_exportWithNotesImport: `prism export ID` stays the bare log;
// `prism export --with-notes ID` writes a zip to stdout (session.jsonl,
// notes.jsonl) that `prism import` reads back into another database,
// labels included; --with-notes excludes --html.
func TestCLI_exportWithNotesImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from.db"), filepath.Join(dir, "to.db")
	st, err := db.Open(ctx, from, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, storetest.Header("s")); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	made, err := st.PutNote(ctx, notes.Input{Session: "s", Kind: notes.KindLabel, CallID: "call_1", Author: "owner", Data: json.RawMessage(`{"label":"zqwrong","note":"why"}`)})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	var bare, zipped, errOut bytes.Buffer
	if code := run(ctx, []string{"export", "--db", from, "s"}, &bare, &errOut); code != 0 || strings.Contains(bare.String(), "zqwrong") {
		t.Fatalf("export: exit %d (%s), label in the bare log: %v", code, errOut.String(), strings.Contains(bare.String(), "zqwrong"))
	}
	if code := run(ctx, []string{"export", "--with-notes", "--db", from, "s"}, &zipped, &errOut); code != 0 {
		t.Fatalf("export --with-notes: exit %d: %s", code, errOut.String())
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped.Bytes()), int64(zipped.Len()))
	if err != nil {
		t.Fatalf("export --with-notes wrote no zip: %v", err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if strings.Join(names, " ") != "session.jsonl notes.jsonl" {
		t.Errorf("zip entries = %v, want session.jsonl notes.jsonl", names)
	}
	file := filepath.Join(dir, "s.zip")
	if err := os.WriteFile(file, zipped.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(ctx, []string{"import", "--db", to, file}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "s\tcreated") {
		t.Fatalf("import of the zip: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	back, err := db.Open(ctx, to, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	got, err := back.Notes(ctx, "s", notes.Query{})
	if err != nil || len(got) != 1 || got[0].ID != made.ID || string(got[0].Data) != string(made.Data) || got[0].CallID != "call_1" {
		t.Errorf("imported notes = %+v, %v; want the label %s", got, err, made.ID)
	}
	errOut.Reset()
	if code := run(ctx, []string{"export", "--with-notes", "--html", "--db", from, "s"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "exclude each other") {
		t.Errorf("export --with-notes --html: exit %d, stderr %q; want a usage error", code, errOut.String())
	}
}
