package db

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/search"
	"prism/sources/dsh"
	"prism/store"
	"prism/store/storetest"
)

// batchFiles writes n one-session prism JSONL files of text-heavy corpus
// sessions b0, b1, … and returns their paths.
func batchFiles(t *testing.T, dir string, n int) []string {
	t.Helper()
	c := storetest.NewCorpus(11)
	var paths []string
	for i := range n {
		h := storetest.Header("b" + string(rune('0'+i)))
		paths = append(paths, writeJSONL(t, dir, h, c.Log(48, 1764500000000+int64(i)*3_600_000)))
	}
	return paths
}

// ftsSegments counts the segments of the search index's FTS4 table: one
// per flush of its pending terms, fewer once merged.
func ftsSegments(t *testing.T, st *Store) int {
	t.Helper()
	var n int
	if err := st.rdb.QueryRow(`SELECT count(*) FROM search_fts_segdir`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportFilesIsOneTransactionAndOneIndexFlush: a batch of good files
// (ImportFilesWith, as prism import runs it) imports every file, files
// every search document in the batch's transaction — the index equals the
// one a file-by-file import builds — and writes the FTS4 terms of the
// whole batch as one segment (no savepoint per file or per session, which
// would flush a segment each).
func TestImportFilesIsOneTransactionAndOneIndexFlush(t *testing.T) {
	ctx := context.Background()
	paths := batchFiles(t, t.TempDir(), 6)
	st := newTestStore(t)
	before := st.w.commits.Load()
	out := st.ImportFilesWith(ctx, paths, store.ImportOptions{FileIndex: true})
	for i, x := range out {
		if x.Err != nil || len(x.Results) != 1 || x.Results[0].Outcome != store.ImportCreated {
			t.Fatalf("file %d: %+v, %v; want one session created", i, x.Results, x.Err)
		}
	}
	if n := st.w.commits.Load() - before; n != 1 {
		t.Errorf("the batch took %d commits, want 1", n)
	}
	if n := ftsSegments(t, st); n != 1 {
		t.Errorf("the batch wrote %d FTS4 segments, want 1 (its pending terms flushed once)", n)
	}
	one := newTestStore(t)
	for _, p := range paths {
		if _, err := one.ImportFileWith(ctx, p, store.ImportOptions{FileIndex: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fullIndexRows(t, st), fullIndexRows(t, one); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the batch's index differs from a file-by-file import's:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestImportFilesKeepsTheGoodFilesAroundABadOne: a file that fails inside
// the batch's transaction — its first session written, its second in
// conflict with a stored session — is rolled back whole (no session,
// event or search document of it kept) and reported with its name and
// reason, while the good files before and after it in the same batch are
// kept and searchable; a file that fails to decode is reported too.
func TestImportFilesKeepsTheGoodFilesAroundABadOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := batchFiles(t, dir, 2)
	c := storetest.NewCorpus(5)
	st := newTestStore(t)
	// The stored session the bad file's second session conflicts with.
	stored := writeJSONL(t, t.TempDir(), storetest.Header("taken"), c.Log(24, 1764400000000))
	if _, err := st.ImportFile(ctx, stored); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, storetest.Header("doomed"), c.Log(36, 1764410000000)); err != nil {
		t.Fatal(err)
	}
	if err := dsh.WriteJSONL(&buf, storetest.Header("taken"), c.Log(30, 1764420000000)); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	garbled := filepath.Join(dir, "garbled.jsonl")
	if err := os.WriteFile(garbled, []byte("not a session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docsBefore := countRows(t, st, "search_docs")
	out := st.ImportFilesWith(ctx, []string{good[0], bad, garbled, good[1]}, store.ImportOptions{FileIndex: true})
	if len(out) != 4 {
		t.Fatalf("%d outcomes for 4 files", len(out))
	}
	for _, i := range []int{0, 3} {
		if x := out[i]; x.Err != nil || len(x.Results) != 1 || x.Results[0].Outcome != store.ImportCreated {
			t.Errorf("good file %d: %+v, %v; want its session created", i, x.Results, x.Err)
		}
	}
	if err := out[1].Err; err == nil || !strings.Contains(err.Error(), "bad.jsonl") || core.ErrorCode(err) != core.CodeConflict {
		t.Errorf("the bad file: %v; want a conflict naming bad.jsonl", err)
	}
	if out[1].Results != nil {
		t.Errorf("the bad file reported sessions %+v", out[1].Results)
	}
	if err := out[2].Err; err == nil || !strings.Contains(err.Error(), "garbled.jsonl") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("the garbled file: %v; want an error naming garbled.jsonl and its line", err)
	}
	if n := countWhere(t, st, "sessions", "id = 'doomed'"); n != 0 {
		t.Errorf("sessions holds the bad file's first session")
	}
	for _, table := range []string{"events", "search_docs", "search_sessions"} {
		if n := countWhere(t, st, table, "session_id = 'doomed'"); n != 0 {
			t.Errorf("%s holds %d rows of the bad file's first session", table, n)
		}
	}
	if _, err := st.LoadSession(ctx, "doomed"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("LoadSession of the bad file's first session: %v, want not found", err)
	}
	taken, err := st.LoadSession(ctx, "taken")
	if err != nil || len(taken.Events) != 24 {
		t.Errorf("the stored session the bad file conflicts with: %v; want its 24 events as they were", err)
	}
	for _, id := range []string{"b0", "b1"} {
		s, err := st.LoadSession(ctx, id)
		if err != nil || len(s.Events) != 48 {
			t.Fatalf("good session %s: %v", id, err)
		}
		var through int64
		if err := st.rdb.QueryRow(`SELECT through FROM search_sessions WHERE session_id = ?`, id).Scan(&through); err != nil || through != s.Events[len(s.Events)-1].Seq {
			t.Errorf("session %s's search watermark %d, %v; want its last seq", id, through, err)
		}
	}
	if got := countRows(t, st, "search_docs") - docsBefore; got == 0 {
		t.Errorf("the good files filed no search documents")
	}
	fullIndexRows(t, st) // every document has its FTS row
	for id, want := range map[string]bool{"b0": true, "b1": true, "doomed": false} {
		q, err := search.Parse("session:"+id, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		page, err := st.Search(ctx, q, store.SearchOptions{})
		if err != nil || (len(page.Hits) > 0) != want {
			t.Errorf("search session:%s: %d hits, %v; want hits %v", id, len(page.Hits), err, want)
		}
	}
}

// countWhere counts a table's rows that match cond.
func countWhere(t *testing.T, st *Store, table, cond string) int {
	t.Helper()
	var n int
	if err := st.rdb.QueryRow(`SELECT count(*) FROM ` + table + ` WHERE ` + cond).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// countRows counts a table's rows.
func countRows(t *testing.T, st *Store, table string) int {
	t.Helper()
	var n int
	if err := st.rdb.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportRefusesLossyDataAtItsLine: the import's check of a log skips
// the second scan of event data (core.ValidateDecodedLog), since the
// decoder refuses data that is not lossless JSON — with the file, the
// line and the reason — and nothing of the file is kept.
func TestImportRefusesLossyDataAtItsLine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := storetest.NewCorpus(3)
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, storetest.Header("lossy"), c.Log(12, 1764500000000)); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	// Line 3 is the step/start of the first turn: {"turn":1,"step":1}.
	if !strings.Contains(lines[2], `"step":1`) {
		t.Fatalf("line 3 is %q, not a step/start", lines[2])
	}
	lines[2] = strings.Replace(lines[2], `"step":1`, `"step":-0`, 1)
	path := filepath.Join(dir, "lossy.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	st := newTestStore(t)
	out := st.ImportFilesWith(ctx, []string{path}, store.ImportOptions{FileIndex: true})
	if err := out[0].Err; err == nil || !strings.Contains(err.Error(), "lossy.jsonl") || !strings.Contains(err.Error(), "line 3") ||
		!strings.Contains(err.Error(), "negative zero") {
		t.Errorf("import of a file with negative zero in an event's data: %v; want an error naming the file, line 3 and negative zero", err)
	}
	if n := countRows(t, st, "sessions"); n != 0 {
		t.Errorf("the refused file left %d sessions", n)
	}
}

// indexByKey is the index of st as lines keyed by what a document is
// (session, seq, kind, call), not by its row id, with its FTS4 columns and
// its stored text: equal for two stores that filed the same logs in
// different transactions.
func indexByKey(t *testing.T, st *Store) []string {
	t.Helper()
	rows, err := st.rdb.Query(`SELECT d.session_id, d.seq, d.kind, COALESCE(d.call_id, ''), f.body, f.more, t.secs, t.result_secs
		FROM search_docs d LEFT JOIN search_fts f ON f.docid = d.id LEFT JOIN search_text t ON t.id = d.id
		ORDER BY d.session_id, d.seq, d.kind, d.call_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sess, kind, call string
		var seq int64
		var body, more any
		var secs, resultSecs []byte
		if err := rows.Scan(&sess, &seq, &kind, &call, &body, &more, &secs, &resultSecs); err != nil {
			t.Fatal(err)
		}
		var td textDecoder
		text := func(b []byte) string {
			if b == nil {
				return "<none>"
			}
			got, err := td.decode(nil, b)
			if err != nil {
				t.Fatalf("%s seq %d: stored text: %v", sess, seq, err)
			}
			var s strings.Builder
			for _, sec := range got {
				s.WriteString(sec.Label + ":" + sec.Text + "|")
			}
			return s.String()
		}
		out = append(out, fmt.Sprintf("%s %d %s %s %v %v %q %q", sess, seq, kind, call, body, more, text(secs), text(resultSecs)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportFilesReplacedInTheSameBatch: a session one file of a batch
// creates and a later file of the same batch replaces (--replace) with a
// log of the same length — or extends — is filed as the later file's log — its
// search documents and stored texts what a file-by-file import leaves, no
// word of the replaced log searchable (found in review: the first file's
// documents were filed and the second's skipped as already filed).
func TestImportFilesReplacedInTheSameBatch(t *testing.T) {
	for name, second := range map[string][]core.Event{
		"replaced": storetest.NewCorpus(99).Log(30, 1764600000000),
		"extended": storetest.NewCorpus(1).Log(60, 1764500000000),
	} {
		t.Run(name, func(t *testing.T) { testImportFilesTwiceInABatch(t, second) })
	}
}

func testImportFilesTwiceInABatch(t *testing.T, second []core.Event) {
	ctx := context.Background()
	first := storetest.NewCorpus(1).Log(30, 1764500000000)
	a := writeJSONL(t, t.TempDir(), storetest.Header("dup"), first)
	b := writeJSONL(t, t.TempDir(), storetest.Header("dup"), second)
	o := store.ImportOptions{FileIndex: true, Replace: true}
	st := newTestStore(t)
	for i, x := range st.ImportFilesWith(ctx, []string{a, b}, o) {
		if x.Err != nil {
			t.Fatalf("file %d: %v", i, x.Err)
		}
	}
	one := newTestStore(t)
	for _, p := range []string{a, b} {
		if _, err := one.ImportFileWith(ctx, p, o); err != nil {
			t.Fatal(err)
		}
	}
	got, want := indexByKey(t, st), indexByKey(t, one)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		n := 0
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] && n < 3 {
				t.Errorf("document %d:\n got %.300s\nwant %.300s", i, got[i], want[i])
				n++
			}
		}
		t.Errorf("the batch's index (%d documents) differs from a file-by-file import's (%d)", len(got), len(want))
	}
}
