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

// TestCLI_exportLabelsDataset: `prism export --labels` writes one line
// per label on a call, of every session — the call's tool, arguments and
// result beside the label, its score, note and author — and leaves out
// removed labels and labels on a whole session; `prism import` of that
// file refuses it as a labels dataset, importing nothing.
func TestCLI_exportLabelsDataset(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "p.db")
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"a", "b"} {
		if err := st.CreateSession(ctx, storetest.Header(id)); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendEvents(ctx, id, storetest.TurnEvents(0, i+1, i == 1)); err != nil {
			t.Fatal(err)
		}
	}
	put := func(s, call, data string) notes.Note {
		n, err := st.PutNote(ctx, notes.Input{Session: s, Kind: notes.KindLabel, CallID: call, Author: "owner", Data: json.RawMessage(data)})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	put("a", "call_1", `{"label":"wrong","score":1.5,"note":"bad **arg**"}`)
	gone := put("a", "call_1", `{"label":"removed"}`)
	if _, err := st.RemoveNote(ctx, "a", gone.ID); err != nil {
		t.Fatal(err)
	}
	put("a", "", `{"label":"sessionwide"}`)
	put("b", "call_2", `{"label":"flaky"}`)
	st.Close()

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"export", "--labels", "--db", dbPath}, &out, &errOut); code != 0 {
		t.Fatalf("export --labels: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("export --labels wrote %d lines, want 2 (removed and session-wide labels left out):\n%s", len(lines), out.String())
	}
	var rows []map[string]any
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	first, second := rows[0], rows[1]
	if first["session"] != "a" || first["call"] != "call_1" || first["tool"] != "note" || first["arguments"] != "{}" ||
		first["label"] != "wrong" || first["score"] != 1.5 || first["note"] != "bad **arg**" || first["author"] != "owner" || first["isError"] != false {
		t.Errorf("first row = %v", first)
	}
	if res, ok := first["result"].([]any); !ok || len(res) != 1 || !strings.Contains(lines[0], `"text":"ok"`) {
		t.Errorf("first row's result = %v, want the call's content", first["result"])
	}
	if second["session"] != "b" || second["label"] != "flaky" || second["isError"] != true {
		t.Errorf("second row = %v", second)
	}

	file := filepath.Join(dir, "labels.jsonl")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	out.Reset()
	errOut.Reset()
	if code := run(ctx, []string{"import", "--db", other, file}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "a labels dataset, not a session log") {
		t.Errorf("import of the dataset: exit %d, stderr %q; want 1 saying it is a labels dataset", code, errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("import of the dataset reported sessions: %q", out.String())
	}
}
