package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/internal/pgtest"
)

func TestCLI_importExport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "prism.db")
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"import", "--db", dbPath, "testdata/dsh/export/session-export.zip", "testdata/dsh/bad/version.jsonl"}, &out, &errOut)
	if code != 1 {
		t.Errorf("import with one bad file: exit %d, want 1", code)
	}
	if got, want := out.String(), "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b\tcreated\t15 events\nc4f1b2a3-d5e6-4789-8abc-def012345678\tcreated\t13 events\n"; got != want {
		t.Errorf("import stdout = %q, want %q", got, want)
	}
	if !strings.Contains(errOut.String(), "version.jsonl: line 1: unsupported session format version 7") {
		t.Errorf("import stderr = %q", errOut.String())
	}

	out.Reset()
	t.Setenv("PRISM_DB", dbPath)
	if code := run(ctx, []string{"export", "c4f1b2a3-d5e6-4789-8abc-def012345678"}, &out, &errOut); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut.String())
	}
	exported := filepath.Join(dir, "child.jsonl")
	os.WriteFile(exported, out.Bytes(), 0o644)
	var parent bytes.Buffer
	if code := run(ctx, []string{"export", "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b"}, &parent, &errOut); code != 0 {
		t.Fatalf("export the parent: exit %d: %s", code, errOut.String())
	}
	parentFile := filepath.Join(dir, "parent.jsonl")
	os.WriteFile(parentFile, parent.Bytes(), 0o644)

	// A subagent's export alone is refused by a store without its parent.
	var out2 bytes.Buffer
	errOut.Reset()
	if code := run(ctx, []string{"import", exported, "--db", filepath.Join(dir, "orphan.db")}, &out2, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "is a subagent of session 5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b") {
		t.Errorf("importing a subagent without its parent: exit %d, stderr %q", code, errOut.String())
	}

	// With its parent first, the export re-imports into a fresh store and
	// exports identically.
	other := filepath.Join(dir, "other.db")
	out2.Reset()
	if code := run(ctx, []string{"import", parentFile, exported, "--db", other}, &out2, &errOut); code != 0 ||
		out2.String() != "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b\tcreated\t15 events\nc4f1b2a3-d5e6-4789-8abc-def012345678\tcreated\t13 events\n" {
		t.Fatalf("re-import: exit %d, stdout %q", code, out2.String())
	}
	out2.Reset()
	if code := run(ctx, []string{"export", "--db", other, "c4f1b2a3-d5e6-4789-8abc-def012345678"}, &out2, &errOut); code != 0 {
		t.Fatal(errOut.String())
	}
	if !bytes.Equal(out.Bytes(), out2.Bytes()) {
		t.Errorf("export → import → export differs")
	}
	if code := run(ctx, []string{"export", "--db", other, "missing"}, &out2, &errOut); code != 1 || !strings.Contains(errOut.String(), "session missing not found") {
		t.Errorf("export of a missing session: exit %d, stderr %q", code, errOut.String())
	}
	if code := run(ctx, []string{"import", "--db", other}, &out2, &errOut); code != 2 {
		t.Errorf("import without files: exit %d, want 2", code)
	}
}

// TestCLI_importAsReplaceDelete: import --as and --replace say per session
// what happened, a refused import changes nothing, delete removes — on a
// SQLite file and on PostgreSQL alike.
func TestCLI_importAsReplaceDelete(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testCLIImportAsReplaceDelete(t, filepath.Join(t.TempDir(), "prism.db")) })
	t.Run("postgres", func(t *testing.T) { testCLIImportAsReplaceDelete(t, pgtest.DB(t)) })
}

func testCLIImportAsReplaceDelete(t *testing.T, dbPath string) {
	ctx := context.Background()
	dir := t.TempDir()
	const id = "7d0e1f2a-3b4c-4d5e-8f60-718293a4b5c6"
	crashed := "testdata/dsh/crashed/session.jsonl"
	// A copy of the crashed session with its header changed: the stored
	// session and the file now disagree.
	raw, err := os.ReadFile(crashed)
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(dir, "changed.jsonl")
	if err := os.WriteFile(changed, []byte(strings.Replace(string(raw), `"cwd":"`, `"cwd":"/moved`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"cwd":"`) {
		t.Fatal("fixture has no cwd to change")
	}
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // stdout exact, stderr a substring
	}{
		{"first import", []string{"import", crashed}, 0, id + "\tcreated\t9 events\n", "appended 4 crash-repair events"},
		{"again", []string{"import", crashed}, 0, id + "\tunchanged\t9 events\n", "already imported; unchanged"},
		{"a different copy is refused with the way out", []string{"import", changed}, 1, "", "import it under another id (--as NEW_ID, ?as=NEW_ID) or replace the stored one (--replace, ?replace=1)"},
		{"--as two files", []string{"import", "--as", "x", crashed, changed}, 2, "", "--as names one session, so it takes one file (got 2)"},
		{"--as several sessions", []string{"import", "--as", "x", "testdata/dsh/export/session-export.zip"}, 1, "", "(--as, ?as=) needs a file holding exactly one session; it holds 2"},
		{"--as", []string{"import", changed, "--as", "repaired-copy"}, 0, "repaired-copy\tcreated\t9 events\n", "session " + id + " imported as repaired-copy"},
		{"--replace", []string{"import", "--replace", changed}, 0, id + "\treplaced\t9 events\n", "replaced session " + id + " (its 9 stored events by the file's 9; 0 share links revoked)"},
		{"delete", []string{"delete", "repaired-copy", "missing"}, 1, "repaired-copy\tdeleted\t9 events, 0 share links, 0 subagent sessions\n", "session missing not found"},
		{"delete without ids", []string{"delete"}, 2, "", "prism delete [--db PATH] SESSION_ID..."},
	}
	t.Setenv("PRISM_DB", dbPath)
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(ctx, tt.args, &out, &errOut)
		if code != tt.code || out.String() != tt.stdout || !strings.Contains(errOut.String(), tt.stderr) {
			t.Errorf("%s: prism %s = exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
				tt.name, strings.Join(tt.args, " "), code, out.String(), errOut.String(), tt.code, tt.stdout, tt.stderr)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"export", "repaired-copy"}, &out, &errOut); code != 1 {
		t.Errorf("export of a deleted session: exit %d", code)
	}
	if code := run(ctx, []string{"export", id}, &out, &errOut); code != 0 || !strings.Contains(out.String(), `"cwd":"/moved`) {
		t.Errorf("export of the replaced session: exit %d, does not hold the file's header", code)
	}
}
