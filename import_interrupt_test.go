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
	"syscall"
	"testing"

	"prism/db"
	"prism/sources/dsh"
	"prism/store/storetest"
)

// TestImportInterruptedNamesTheFilesNotImported: prism import interrupted
// (its context cancelled, as SIGINT does) while a batch waits for a file
// still being written names every file it did not import — the waiting
// one and those after it, launched or not — ends with one line saying it
// was interrupted and exits with status 1; the files reported imported are
// stored, the others are not.
func TestImportInterruptedNamesTheFilesNotImported(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewCorpus(7)
	write := func(id string, i int) string {
		var buf bytes.Buffer
		if err := dsh.WriteJSONL(&buf, storetest.Header(id), c.Log(12, 1764500000000+int64(i)*3_600_000)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// More than durableEvery files, so their lines are printed (after a
	// durable commit) before the import reaches the pipe.
	const good = durableEvery + 2
	var first, after []string
	for i := range good {
		first = append(first, write(fmt.Sprintf("g%02d", i), i))
	}
	for i := range 5 {
		after = append(after, write(fmt.Sprintf("h%02d", i), good+i))
	}
	var piped bytes.Buffer
	if err := dsh.WriteJSONL(&piped, storetest.Header("p00"), c.Log(12, 1764600000000)); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	files := append(append(append([]string{}, first...), pipe), after...)

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
	if err := os.WriteFile(pipe, piped.Bytes(), 0o644); err != nil {
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
