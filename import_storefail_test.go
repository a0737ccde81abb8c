package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prism/sources/dsh"
	"prism/store/storetest"
)

// TestImportStopsWhenTheStoreFails: prism import whose database another
// process locks midway — a real SQLITE_BUSY once the import's busy
// timeout passes, no file's fault — stops at the batch that met it: the
// files committed before it are reported imported (stdout) and kept, the
// store's error is printed once, every other file is reported not
// imported and none is blamed for it, the exit status is 1; run again
// once the lock is gone, the same import creates the rest and leaves the
// others unchanged.
func TestImportStopsWhenTheStoreFails(t *testing.T) {
	// The first batch (more than durableEvery small files) commits
	// durably and prints its lines; then the import waits on a named pipe
	// (a batch of its own), while the test locks the database; the files
	// after it are the next batch.
	pi := newPipedImport(t)
	const good = pipedFirst
	first, after, pipe, piped, files := pi.first, pi.after, pi.pipe, pi.piped, pi.files
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	cmd := prismCmd(t, 0, append([]string{"import", "--db", dbPath}, files...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A watchdog, should it never end: the reads below end.
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	sc := bufio.NewScanner(stdout)
	var lines []string
	for len(lines) < good && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != good {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("prism import reported %d files before blocking on the pipe, want %d\n%s", len(lines), good, tail(stderr.String()))
	}
	// Lock the database: the import's next write transaction waits its
	// busy timeout, then fails.
	conn, err := sql.Open("sqlite3", "file:"+dbPath+"?_busy_timeout=60000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	lock, err := conn.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pipe, piped, 0o644); err != nil {
		t.Fatal(err)
	}
	// The pipe's batch waits its busy timeout and fails; the batch queued
	// behind it may too, if the writer took it before the stop.
	rest, _ := io.ReadAll(stdout)
	err = cmd.Wait()
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	t.Logf("prism import's stderr:\n%s", stderr.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("prism import exited with %v, want status 1\n%s", err, tail(stderr.String()))
	}
	if len(rest) != 0 {
		t.Errorf("prism import reported more files imported: %q", rest)
	}
	for i, l := range lines {
		if want := fmt.Sprintf("g%02d\tcreated\t", i); !strings.HasPrefix(l, want) {
			t.Errorf("line %d = %q, want %q…", i+1, l, want)
		}
	}
	errLines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if n := strings.Count(stderr.String(), "database is locked"); n != 1 {
		t.Errorf("stderr names the store's error %d times, want once:\n%s", n, stderr.String())
	}
	if !strings.HasPrefix(errLines[0], "prism import: the store failed: import batch of 1 files: ") {
		t.Errorf("stderr's first line %q, want the store's failure", errLines[0])
	}
	for _, f := range append([]string{pipe}, after...) {
		if !strings.Contains(stderr.String(), "prism import: "+f+": not imported\n") {
			t.Errorf("stderr does not report %s not imported:\n%s", f, stderr.String())
		}
		if strings.Contains(stderr.String(), "import "+f) {
			t.Errorf("stderr blames %s for the store's failure:\n%s", f, stderr.String())
		}
	}
	if last := errLines[len(errLines)-1]; !strings.Contains(last, "the import stopped as the store failed") {
		t.Errorf("stderr's last line %q, want the stop and what to do", last)
	}
	var sessions, events int
	if err := conn.QueryRow(`SELECT count(*), COALESCE(sum(last_seq + 1), 0) FROM sessions`).Scan(&sessions, &events); err != nil {
		t.Fatal(err)
	}
	if sessions != good {
		t.Errorf("%d sessions after the stop, want the %d imported", sessions, good)
	}
	// Once the store works, the same import (less the pipe) creates the
	// rest and leaves the others as they are.
	again := prismCmd(t, 0, append([]string{"import", "--db", dbPath}, append(first, after...)...)...)
	out, err := again.Output()
	if err != nil {
		t.Fatalf("the import again: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != good+len(after) {
		t.Fatalf("the import again reported %d files, want %d:\n%s", len(got), good+len(after), out)
	}
	for i, l := range got {
		want := fmt.Sprintf("g%02d\tunchanged\t", i)
		if i >= good {
			want = fmt.Sprintf("h%02d\tcreated\t", i-good)
		}
		if !strings.HasPrefix(l, want) {
			t.Errorf("again, line %d = %q, want %q…", i+1, l, want)
		}
	}
}

// pipedImport is prism import's files for a test that stops it midway:
// first, more small files than durableEvery (their batch commits durably
// and prints its lines); pipe, a named pipe the import then waits on
// (piped is what to write into it: session p00); after, five more files.
type pipedImport struct {
	first, after []string
	pipe         string
	piped        []byte
	files        []string // first, pipe, after: the import's arguments
}

// newPipedImport writes a pipedImport's files into a new directory.
func newPipedImport(t *testing.T) pipedImport {
	t.Helper()
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
	var pi pipedImport
	for i := range pipedFirst {
		pi.first = append(pi.first, write(fmt.Sprintf("g%02d", i), i))
	}
	for i := range 5 {
		pi.after = append(pi.after, write(fmt.Sprintf("h%02d", i), pipedFirst+i))
	}
	var piped bytes.Buffer
	if err := dsh.WriteJSONL(&piped, storetest.Header("p00"), c.Log(12, 1764600000000)); err != nil {
		t.Fatal(err)
	}
	pi.piped = piped.Bytes()
	pi.pipe = filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(pi.pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	pi.files = append(append(append([]string{}, pi.first...), pi.pipe), pi.after...)
	return pi
}

// pipedFirst is how many files a pipedImport has before its pipe.
const pipedFirst = durableEvery + 2
