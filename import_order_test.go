package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/sources/dsh"
	"prism/store/storetest"
)

// TestImportKeepsTheFilesOrder: prism import decodes the next file while
// the one before commits, yet the outcome is a one-by-one import's — a
// session's prefix then its whole log is created then extended, the whole
// log then its prefix created then refused (a conflict), a file that fails
// between them changes nothing and is reported, and the lines come in the
// files' order.
func TestImportKeepsTheFilesOrder(t *testing.T) {
	dir := t.TempDir()
	log := storetest.NewCorpus(3).Log(60, 1764500000000) // 12 events a turn
	// A whole log long enough that its prefix, the next file, decodes
	// long before it: were the transactions not kept in the files' order,
	// the prefix would commit first and the whole log would extend it.
	long := storetest.NewCorpus(4).Log(6000, 1764500000000)
	write := func(name, id string, n int) string {
		src := log
		if strings.HasPrefix(id, "b") {
			src = long
		}
		var buf bytes.Buffer
		if err := dsh.WriteJSONL(&buf, storetest.Header(id), src[:n]); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("not a session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []string
	var want []string
	for i := range 6 {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		files = append(files,
			write(a+"-prefix.jsonl", a, 24), bad, write(a+"-whole.jsonl", a, len(log)),
			write(b+"-whole.jsonl", b, len(long)), write(b+"-prefix.jsonl", b, 24))
		want = append(want,
			fmt.Sprintf("%s\tcreated\t24 events", a), fmt.Sprintf("%s\textended\t%d events", a, len(log)),
			fmt.Sprintf("%s\tcreated\t%d events", b, len(long)))
	}
	var stdout, stderr bytes.Buffer
	err := runImport(context.Background(), append([]string{"--db", filepath.Join(dir, "prism.db")}, files...), &stdout, &stderr)
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("prism import with failing files: %v, want exit status 1\n%s", err, stderr.String())
	}
	if got := strings.Split(strings.TrimSpace(stdout.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(stderr.String(), "bad.jsonl"); n != 6 {
		t.Errorf("stderr names the bad file %d times, want 6:\n%s", n, stderr.String())
	}
	for i := range 6 {
		if want := fmt.Sprintf("b%d-prefix.jsonl: session b%d already exists with a different log", i, i); !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not report %q:\n%s", want, stderr.String())
		}
	}
}
