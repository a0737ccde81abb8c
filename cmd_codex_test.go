package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestCLI_importCodex imports Codex rollouts through the real command on a
// SQLite file: detected by content, the session id the rollout's, a grown
// file extended, the same file unchanged, a .jsonl.zst archive read like
// the plain file, and a corrupt archive refused with a message naming it
// while the other files still import.
func TestCLI_importCodex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "prism.db")
	const id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	plain, err := os.ReadFile("sources/codex/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(plain), "\n")
	file := filepath.Join(dir, "rollout-2026-05-01T10-00-00-"+id+".jsonl")
	importOnce := func(db string, args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(ctx, append([]string{"import", "--db", db}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// Fifteen lines end the turn (task_complete); the sixteenth grows it.
	if err := os.WriteFile(file, []byte(strings.Join(lines[:15], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := importOnce(dbPath, file); code != 0 || !strings.HasPrefix(out, id+"\tcreated\t") {
		t.Fatalf("first import: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := os.WriteFile(file, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := importOnce(dbPath, file)
	if code != 0 || !strings.HasPrefix(out, id+"\textended\t") {
		t.Fatalf("grown file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	events := strings.TrimPrefix(out, id+"\textended\t")
	if code, out, errOut := importOnce(dbPath, file); code != 0 || out != id+"\tunchanged\t"+events {
		t.Fatalf("same file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// The archive of the same rollout, into a fresh store: the same line.
	var zbuf bytes.Buffer
	enc, err := zstd.NewWriter(&zbuf)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(plain)
	enc.Close()
	archive := filepath.Join(dir, "rollout-2026-05-01T10-00-00-"+id+".jsonl.zst")
	if err := os.WriteFile(archive, zbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A corrupt archive: the stream cut in its middle and garbage after.
	z := zbuf.Bytes()
	corrupt := append(append([]byte{}, z[:len(z)/2]...), bytes.Repeat([]byte{0xff}, 64)...)
	bad := filepath.Join(dir, "rollout-2026-05-02T10-00-00-0199a1b2-c3d4-7e5f-8a9b-00000000bad0.jsonl.zst")
	if err := os.WriteFile(bad, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	db2 := filepath.Join(dir, "second.db")
	code, out, errOut = importOnce(db2, bad, archive)
	if code != 1 || out != id+"\tcreated\t"+events {
		t.Errorf("archive: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, bad+":") || !strings.Contains(errOut, "zstd") {
		t.Errorf("corrupt archive: stderr %q does not name the file and its zstd error", errOut)
	}
	// Detection by content, whatever the name.
	renamed := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(renamed, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := importOnce(db2, renamed); code != 0 || out != id+"\tunchanged\t"+events {
		t.Errorf("renamed rollout: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
