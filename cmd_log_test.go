package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if got, want := out.String(), "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b\nc4f1b2a3-d5e6-4789-8abc-def012345678\n"; got != want {
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
		out2.String() != "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b\nc4f1b2a3-d5e6-4789-8abc-def012345678\n" {
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
