package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prism/sources/dsh"
	"prism/store/storetest"
)

// TestImportBatches: prism import's batches keep the files' order, start
// small (an eighth, a quarter, a half of the bound) and grow to the bound
// in bytes — a compressed file counting 8 times its size — or to
// importBatchFiles files, a file bigger than the bound alone, a file of
// unknown size alone; the bound is an eighth of the memory budget when
// that is smaller.
func TestImportBatches(t *testing.T) {
	sizes := map[string]int64{}
	packed := map[string]bool{}
	size := func(f string) (int64, bool, error) {
		n, ok := sizes[f]
		if !ok {
			return 0, false, errors.New("no such file")
		}
		return n, packed[f], nil
	}
	var files []string
	add := func(name string, n int64, z bool) {
		files = append(files, name)
		sizes[name], packed[name] = n, z
	}
	const K = 1 << 10
	for i := range 8 {
		add(fmt.Sprintf("a%d", i), 128*K, false) // 1 MiB: 256, 512 KiB, 1 MiB batches
	}
	add("big", 3<<20, false)   // past the bound: alone
	add("z", 128*K, true)      // counts 1 MiB
	add("p", 1<<20, false)     // with z: the 2 MiB bound
	add("q", 1, false)         // the next batch
	files = append(files, "x") // unknown: alone
	for i := range importBatchFiles + 1 {
		add(fmt.Sprintf("s%d", i), 1, false) // the file count bound
	}
	got := importBatches(files, 64<<20, size)
	var want [][]string
	want = append(want, []string{"a0", "a1"}, []string{"a2", "a3", "a4", "a5"}, []string{"a6", "a7"},
		[]string{"big"}, []string{"z", "p"}, []string{"q"}, []string{"x"})
	var s []string
	for i := range importBatchFiles {
		s = append(s, fmt.Sprintf("s%d", i))
	}
	want = append(want, s, []string{fmt.Sprintf("s%d", importBatchFiles)})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("importBatches:\n%v\nwant:\n%v", got, want)
	}
	// A small memory budget bounds a batch at an eighth of it.
	got = importBatches(files[:8], 4<<20, size)
	if fmt.Sprint(got) != fmt.Sprint([][]string{{"a0"}, {"a1"}, {"a2", "a3"}, {"a4", "a5", "a6", "a7"}}) {
		t.Errorf("importBatches under a 4 MiB budget: %v", got)
	}
}

// TestImportCrashAfterABatchCommit: prism import prints a batch's lines
// once its durable commit is done; killed after that (SIGKILL, while it
// waits on the next file, a named pipe nobody writes), the store holds
// every file it reported — their events and their search documents,
// complete — and nothing of the file it was reading.
func TestImportCrashAfterABatchCommit(t *testing.T) {
	dir := t.TempDir()
	c := storetest.NewCorpus(9)
	var files []string
	// Small files: all of them in the first batch (under an eighth of
	// importBatchBytes), which holds more than durableEvery files and so
	// commits durably and prints their lines.
	const good = durableEvery + 4
	var total int
	for i := range good {
		var buf bytes.Buffer
		if err := dsh.WriteJSONL(&buf, storetest.Header(fmt.Sprintf("g%02d", i)), c.Log(12, 1764500000000+int64(i)*3_600_000)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("g%02d.jsonl", i))
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		total += buf.Len()
	}
	if total > importBatchBytes/8 {
		t.Fatalf("the files take %d bytes, more than the first batch holds", total)
	}
	pipe := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	cmd := prismCmd(t, 0, append([]string{"import", "--db", dbPath}, append(files, pipe)...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A watchdog, should it never report them: the read below ends.
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	sc := bufio.NewScanner(stdout)
	var lines []string
	for len(lines) < good && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, stdout)
	cmd.Wait()
	if len(lines) != good {
		t.Fatalf("prism import reported %d files before blocking on the pipe, want %d\n%s", len(lines), good, tail(stderr.String()))
	}
	for i, l := range lines {
		if want := fmt.Sprintf("g%02d\tcreated\t", i); !strings.HasPrefix(l, want) {
			t.Errorf("line %d = %q, want %q…", i+1, l, want)
		}
	}
	conn, err := sql.Open("sqlite3", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var sessions, events, behind, docs int
	if err := conn.QueryRow(`SELECT count(*) FROM sessions`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`SELECT count(*) FROM events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`SELECT count(*) FROM sessions s LEFT JOIN search_sessions x ON x.session_id = s.id
		WHERE x.through IS NULL OR x.through < s.last_seq`).Scan(&behind); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`SELECT count(*) FROM search_docs d JOIN search_fts f ON f.docid = d.id WHERE d.session_id = ?`,
		fmt.Sprintf("g%02d", good-1)).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if sessions != good || events < good*12 || behind != 0 || docs == 0 {
		t.Errorf("after the crash: %d sessions, %d events, %d sessions behind in the index, %d documents of the last file; want %d sessions, ≥ %d events, none behind, its documents",
			sessions, events, behind, docs, good, good*12)
	}
}
