package dsh_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/sources/dsh"
)

// TestForeignFormats holds ReadFileWith and DecodeNamed to their hook: a
// foreign format claims a file by its head and decodes the whole stream; a
// prism/dsh log or a file it does not claim decodes as before.
func TestForeignFormats(t *testing.T) {
	var seen []byte
	foreign := []dsh.Foreign{{
		Name:   "test",
		Detect: func(head []byte) bool { return bytes.HasPrefix(head, []byte("FOREIGN ")) },
		Read: func(r *bufio.Reader, lim dsh.Limits) ([]*dsh.Log, error) {
			all, err := io.ReadAll(r)
			seen = all
			return []*dsh.Log{{Header: core.SessionHeader{ID: strings.TrimSpace(string(all[len("FOREIGN "):]))}}}, err
		},
	}}
	dir := t.TempDir()
	file := filepath.Join(dir, "x.log")
	if err := os.WriteFile(file, []byte("FOREIGN abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, format, err := dsh.ReadFileWith(file, dsh.Limits{}, foreign)
	if err != nil || format != dsh.FormatForeign || len(logs) != 1 || logs[0].Header.ID != "abc" || string(seen) != "FOREIGN abc\n" {
		t.Fatalf("ReadFileWith: %v %v %+v %q", err, format, logs, seen)
	}
	logs, format, err = dsh.DecodeNamed("", strings.NewReader("FOREIGN def\n"), -1, dsh.Limits{}, foreign)
	if err != nil || format != dsh.FormatForeign || logs[0].Header.ID != "def" {
		t.Fatalf("DecodeNamed: %v %v %+v", err, format, logs)
	}
	// Without the hook, the same file is a JSONL log that does not decode.
	if _, format, err := dsh.ReadFileWith(file, dsh.Limits{}, nil); err == nil || format != dsh.FormatJSONL {
		t.Errorf("without the hook: %v %v", format, err)
	}
	// A prism log is never offered to a format that does not claim it.
	header := `{"type":"session","version":0,"id":"p","createdAt":1}` + "\n"
	logs, format, err = dsh.DecodeNamed("", strings.NewReader(header), -1, dsh.Limits{}, foreign)
	if err != nil || format != dsh.FormatJSONL || logs[0].Header.ID != "p" {
		t.Errorf("prism log: %v %v %+v", err, format, logs)
	}
}
