package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/db"
)

// TestImportInterruptedNamesTheFilesNotImported: prism import interrupted
// (its context cancelled, as SIGINT does) while a batch waits for a file
// still being written names every file it did not import — the waiting
// one and those after it, launched or not — ends with one line saying it
// was interrupted and exits with status 1; the files reported imported are
// stored, the others are not.
func TestImportInterruptedNamesTheFilesNotImported(t *testing.T) {
	pi := newPipedImport(t)
	const good = pipedFirst
	first, after, pipe, piped, files := pi.first, pi.after, pi.pipe, pi.piped, pi.files
	dbPath := filepath.Join(t.TempDir(), "prism.db")

	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		err := runImport(ctx, append([]string{"--db", dbPath}, files...), outW, &stderr)
		outW.Close()
		done <- err
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var stdout []string
	for len(stdout) < good {
		l, ok := <-lines
		if !ok {
			t.Fatalf("prism import ended after %d lines, before it reached the pipe: %v\n%s", len(stdout), <-done, stderr.String())
		}
		stdout = append(stdout, l)
	}
	// The import now waits on the pipe: interrupt it, then let the read end.
	interrupt()
	if err := os.WriteFile(pipe, piped, 0o644); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		stdout = append(stdout, l)
	}
	err := <-done
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Errorf("interrupted prism import: %v, want exit status 1", err)
	}
	imported := map[string]bool{}
	for _, l := range stdout {
		imported[strings.SplitN(l, "\t", 2)[0]] = true
	}
	for i, f := range first {
		if id := fmt.Sprintf("g%02d", i); !imported[id] {
			t.Errorf("%s (%s) not reported imported, though it was read before the interrupt", f, id)
		}
	}
	if imported["p00"] {
		t.Errorf("the file being read when interrupted reported imported")
	}
	if !strings.Contains(stderr.String(), pipe+": not imported") {
		t.Errorf("stderr does not name %s, which was not imported:\n%s", pipe, stderr.String())
	}
	for i, f := range after {
		id := fmt.Sprintf("h%02d", i)
		if notImported := strings.Contains(stderr.String(), f+": not imported"); imported[id] == notImported {
			t.Errorf("%s: reported imported %v and not imported %v: want exactly one\n%s", f, imported[id], notImported, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "prism import: interrupted;") {
		t.Errorf("stderr does not say the import was interrupted:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("stderr reports the cancel as a file's failure:\n%s", stderr.String())
	}
	st, err := db.Open(context.Background(), dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"p00", "h00", "h01", "h02", "h03", "h04", "g00"} {
		_, err := st.Session(context.Background(), id)
		if stored := err == nil; stored != imported[id] {
			t.Errorf("session %s stored %v, reported imported %v", id, stored, imported[id])
		}
	}
}
