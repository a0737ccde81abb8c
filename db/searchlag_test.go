package db

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// lagForever makes the writer keep its lag until something asks for it (a
// search, another write, Close): what a test sees then is not decided by a
// timer. It runs on the writer goroutine, as every change of its state.
func lagForever(t testing.TB, st *Store) {
	t.Helper()
	if err := st.write(context.Background(), func(t *wtx) error { t.w.lag.idle = time.Hour; return nil }); err != nil {
		t.Fatal(err)
	}
}

// openLagging opens a store that keeps its lag (lagForever) with an empty
// session "s".
func openLagging(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "lag.db"), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	lagForever(t, st)
	storetest.MustCreate(t, st, "s")
	return st
}

// watermarks reads each indexed session's watermark and last seq from the
// file itself.
func watermarks(t testing.TB, q interface {
	Query(string, ...any) (*sql.Rows, error)
}) map[string][2]int64 {
	t.Helper()
	rows, err := q.Query("SELECT s.id, x.through, s.last_seq FROM search_sessions x JOIN sessions s ON s.id = x.session_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var id string
		var through, last int64
		if err := rows.Scan(&id, &through, &last); err != nil {
			t.Fatal(err)
		}
		out[id] = [2]int64{through, last}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSearchFindsAnAcknowledgedAppend: the index lags the log, but a search
// right after an acknowledged append finds it — the search has the writer
// file the lag first — and a search with nothing lagging writes nothing.
func TestSearchFindsAnAcknowledgedAppend(t *testing.T) {
	ctx := context.Background()
	st := openLagging(t)
	for i := range 3 {
		events := storetest.TurnEvents(int64(i*8), i+1, false)
		events[2] = storetest.Ev(int64(i*8+2), core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":"quokka%d"}],"source":{"kind":"user"}}`, i, i))
		if err := st.AppendEvents(ctx, "s", events); err != nil {
			t.Fatal(err)
		}
		if got := watermarks(t, st.rdb)["s"]; got != [2]int64{int64(i*8 - 1), int64(i*8 + 7)} {
			t.Fatalf("after append %d: watermark and last seq %v, want the append unindexed (the test proves nothing)", i, got)
		}
		q, err := search.Parse(fmt.Sprintf("quokka%d", i), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		page, err := st.Search(ctx, q, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(page.Hits, func(h SearchHit) bool { return h.Seq == int64(i*8+2) }) {
			t.Fatalf("quokka%d right after its append: %+v, want seq %d", i, page.Hits, i*8+2)
		}
		if got := watermarks(t, st.rdb)["s"]; got[0] != got[1] {
			t.Fatalf("after the search: watermark and last seq %v, want the log indexed", got)
		}
	}
	var before int64
	if err := st.rdb.QueryRow("PRAGMA data_version").Scan(&before); err != nil {
		t.Fatal(err)
	}
	// A search with nothing lagging: no write transaction commits.
	q, err := search.Parse("quokka0", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Search(ctx, q, SearchOptions{}); err != nil {
		t.Fatal(err)
	}
	var after int64
	if err := st.rdb.QueryRow("PRAGMA data_version").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("a search with nothing lagging committed a write (data_version %d → %d)", before, after)
	}
	storetest.CheckSearchIndex(t, st)
}

// TestSearchCatchesUpAfterAnUnfiledLag: events committed but never indexed
// (the store closed without filing its lag, as a crash leaves them) are
// indexed when the file is opened again — each exactly once, however
// often it is reopened. TestCrash proves the same under SIGKILL.
func TestSearchCatchesUpAfterAnUnfiledLag(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lag.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	lagForever(t, st)
	// Close as a crash would: without filing the lag. (A write, so set
	// before the appends: the writer files the lag before every write.)
	if err := st.write(ctx, func(t *wtx) error { t.w.lag.skipCloseFlush = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for g := range 3 {
		id := fmt.Sprint("s", g)
		storetest.MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, storetest.NewCorpus(int64(g)).Log(60, 1764500000000)); err != nil {
			t.Fatal(err)
		}
	}
	// One session indexed through part of its log: the catch-up files
	// only what follows its watermark.
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "s1", storetest.TurnEvents(60, 99, true)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	marks := watermarks(t, raw)
	raw.Close()
	if marks["s1"] != [2]int64{59, 67} {
		t.Fatalf("after close without filing: s1's watermark and last seq %v, want [59 67] (the test proves nothing)", marks["s1"])
	}
	var docs int64
	for i := range 3 {
		st, err := Open(ctx, path, Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		for id, m := range watermarks(t, st.rdb) { // Open caught up
			if m[0] != m[1] {
				t.Errorf("open %d: %s indexed through %d of %d", i, id, m[0], m[1])
			}
		}
		storetest.CheckSearchIndex(t, st) // every document the logs call for, none else
		var n int64
		if err := st.rdb.QueryRow("SELECT count(*) FROM search_docs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if i > 0 && n != docs {
			t.Errorf("open %d: %d documents, %d before: filed twice", i, n, docs)
		}
		docs = n
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// indexRows lists a store's search index by document: search_docs' row and
// search_fts' terms, without the docid (which counts documents of all
// sessions in the order they were filed).
func indexRows(t *testing.T, st *Store) []string {
	t.Helper()
	if err := st.catchUpIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := st.rdb.Query(`SELECT d.session_id, d.seq, d.kind, COALESCE(d.call_id, '<null>'), COALESCE(d.tool, '<null>'),
		COALESCE(d.result_seq, '<null>'), COALESCE(d.error, '<null>'), d.time, f.name, f.body, f.more, f.err
		FROM search_docs d JOIN search_fts f ON f.docid = d.id ORDER BY d.session_id, d.seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cols [12]any
		ptrs := make([]any, len(cols))
		for i := range cols {
			ptrs[i] = &cols[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range cols {
			if v, ok := c.(string); ok {
				fmt.Fprintf(&b, "%q ", v)
			} else {
				fmt.Fprintf(&b, "%v ", c)
			}
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLaggedIndexEqualsInlineIndex: the same logs, written the same way to
// two stores — one filing the index in each append's transaction, as prism
// did before the lag, the other through the lag, filed at random points
// (so a call and its result fall in one index transaction or two) — give
// the same index, row for row and term for term. The logs hold reused call
// ids, second results, results without a call, failures, retitles, words
// a session hands over, an import and a replaced log.
func TestLaggedIndexEqualsInlineIndex(t *testing.T) {
	ctx := context.Background()
	call := func(seq int64, id, word string) core.Event {
		return storetest.Ev(seq, core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":%q,"name":"bash","arguments":"{\"command\":\"echo %s\"}"}`, id, word))
	}
	result := func(seq int64, id, word string, isError bool) core.Event {
		return storetest.Ev(seq, core.EventToolResult, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"m%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%q}],"isError":%t}],"source":{"kind":"tool","callId":%q}}}`, seq, id, word, isError, id))
	}
	pairs := []core.Event{
		call(0, "c", "first"), result(1, "c", "firstout", false),
		call(2, "c", "second"), result(3, "c", "secondout", true), result(4, "c", "extraout", false),
		result(5, "orphan", "orphanout", false), call(6, "d", "early"), call(7, "d", "late"),
		result(8, "d", "lateout", false), result(9, "d", "earlyout", false), call(10, "e", "never"),
		storetest.Ev(11, core.EventSessionTitle, `{"title":"the pairs, retitled"}`),
	}
	write := func(st *Store, seed int64, file func()) {
		r := rand.New(rand.NewSource(seed))
		maybeFile := func() {
			if r.Intn(3) == 0 {
				file()
			}
		}
		for _, id := range []string{"pairs", "replaced"} {
			storetest.MustCreate(t, st, id)
			for i := 0; i < len(pairs); {
				n := 1 + r.Intn(3)
				n = min(n, len(pairs)-i)
				if err := st.AppendEvents(ctx, id, pairs[i:i+n]); err != nil {
					t.Fatal(err)
				}
				i += n
				maybeFile()
			}
		}
		for g := range 3 {
			id := fmt.Sprint("corpus", g)
			storetest.MustCreate(t, st, id)
			log := storetest.NewCorpus(int64(g)).Log(300, 1764500000000+int64(g))
			for i := 0; i < len(log); {
				n := min(1+r.Intn(8), len(log)-i)
				if err := st.AppendEvents(ctx, id, log[i:i+n]); err != nil {
					t.Fatal(err)
				}
				i += n
				maybeFile()
			}
		}
		// A session handing over its facts (and the words of its calls).
		sess, err := core.NewSession(ctx, storetest.Header("handed"), core.SessionOptions{Store: st, Logger: quietLogger(), Now: func() time.Time { return time.UnixMilli(1764500000000) }})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if _, err := sess.Append(ctx, core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: fmt.Sprint("h", i%4), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"okapi%d.txt"}`, i)}, core.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			if i%5 == 4 {
				if err := sess.Sync(ctx); err != nil {
					t.Fatal(err)
				}
				maybeFile()
			}
		}
		if err := sess.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		storetest.MustImport(t, st, filepath.Join(storetest.Fixtures, "export/session-export.zip"))
		maybeFile()
		storetest.MustImport(t, st, filepath.Join(storetest.Fixtures, "basic/session.jsonl"))
		maybeFile()
		// A replaced log: its documents give way to the file's.
		if _, err := st.ImportFileWith(ctx, filepath.Join(storetest.Fixtures, "basic/session.jsonl"), store.ImportOptions{As: "replaced", Replace: true}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendEvents(ctx, "replaced", []core.Event{storetest.Ev(39, core.EventSessionTitle, `{"title":"replaced, retitled"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for seed := range int64(3) {
		inline, err := Open(ctx, filepath.Join(dir, fmt.Sprint("inline", seed, ".db")), Options{Logger: quietLogger(), SyncNormal: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := inline.write(ctx, func(t *wtx) error { t.w.lag.inline = true; return nil }); err != nil {
			t.Fatal(err)
		}
		lagged, err := Open(ctx, filepath.Join(dir, fmt.Sprint("lagged", seed, ".db")), Options{Logger: quietLogger(), SyncNormal: true})
		if err != nil {
			t.Fatal(err)
		}
		lagForever(t, lagged)
		// yielding files its lag as an idle writer does, stopping early
		// (after 1 to 6 events or sessions) as if a request came.
		yielding, err := Open(ctx, filepath.Join(dir, fmt.Sprint("yielding", seed, ".db")), Options{Logger: quietLogger(), SyncNormal: true})
		if err != nil {
			t.Fatal(err)
		}
		lagForever(t, yielding)
		write(inline, seed, func() {})
		write(lagged, seed, func() {
			if err := lagged.catchUpIndex(ctx); err != nil {
				t.Fatal(err)
			}
		})
		r := rand.New(rand.NewSource(seed))
		yields := 0
		write(yielding, seed, func() {
			left := 1 + r.Intn(6)
			yield := func() bool {
				left--
				if left == 0 {
					yields++
				}
				return left == 0
			}
			if err := yielding.submit(ctx, &request{kind: kindIndex, yield: yield}); err != nil {
				t.Fatal(err)
			}
		})
		if yields == 0 {
			t.Fatal("no index transaction yielded: the test proves little")
		}
		want, got, gotYielding := indexRows(t, inline), indexRows(t, lagged), indexRows(t, yielding)
		if len(want) < 400 {
			t.Fatalf("the inline index holds %d documents: the test proves little", len(want))
		}
		if !strings.Contains(strings.Join(want, "\n"), "okapi") {
			t.Fatal("the handed-over words are not in the inline index")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: the lagged index differs from the inline one (-inline +lagged):\n%s", seed, diff)
		}
		if diff := cmp.Diff(want, gotYielding); diff != "" {
			t.Errorf("seed %d: the index filed in yielding transactions differs from the inline one (-inline +yielding):\n%s", seed, diff)
		}
		storetest.CheckSearchIndex(t, lagged)
		storetest.CheckSearchIndex(t, yielding)
		inline.Close()
		lagged.Close()
		yielding.Close()
	}
}

// TestSearchIndexRecoversFromAFailedIndexTransaction: an index transaction
// that fails files nothing and moves no watermark; appends go on, a search
// reports the failure rather than miss events, and once the index can be
// written again the next one files every event from the log, once.
func TestSearchIndexRecoversFromAFailedIndexTransaction(t *testing.T) {
	ctx := context.Background()
	st := openLagging(t)
	exec := func(q string) {
		t.Helper()
		if err := st.write(ctx, func(t *wtx) error { _, err := t.tx.Exec(q); return err }); err != nil {
			t.Fatal(err)
		}
	}
	// A trigger on the writer's connection refuses every document.
	exec("CREATE TEMP TRIGGER refuse BEFORE INSERT ON search_docs BEGIN SELECT RAISE(ABORT, 'index refused'); END")
	for i := range 3 {
		if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(int64(i*8), i+1, i == 1)); err != nil {
			t.Fatalf("append %d while the index refuses: %v", i, err)
		}
	}
	q, err := search.Parse("thing", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Search(ctx, q, SearchOptions{}); err == nil || !strings.Contains(err.Error(), "index refused") {
		t.Fatalf("search while the index refuses: %v, want the index's failure", err)
	}
	if got := watermarks(t, st.rdb)["s"]; got != [2]int64{-1, 23} {
		t.Fatalf("after the failed index transaction: watermark and last seq %v, want [-1 23]", got)
	}
	exec("DROP TRIGGER refuse") // the write's own catch-up fails first, and the write goes on
	if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(24, 4, false)); err != nil {
		t.Fatal(err)
	}
	storetest.CheckSearchIndex(t, st)
	if got := watermarks(t, st.rdb)["s"]; got != [2]int64{31, 31} {
		t.Errorf("after recovery: watermark and last seq %v, want [31 31]", got)
	}
}

// TestIndexRebuildsASessionBehindItsDocuments: a watermark behind
// documents that exist (a file an older prism wrote to after migration
// 0007, or one edited by hand) neither stops Open nor search: that
// session's documents are rebuilt from its log, once, and the others are
// untouched.
func TestIndexRebuildsASessionBehindItsDocuments(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "behind.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for g := range 2 {
		id := fmt.Sprint("s", g)
		storetest.MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, storetest.NewCorpus(int64(g)).Log(40, 1764500000000)); err != nil {
			t.Fatal(err)
		}
	}
	before := indexRows(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE search_sessions SET through = through - 5 WHERE session_id = 's1'"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	st, err = Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Open with a watermark behind its documents: %v", err)
	}
	defer st.Close()
	for id, m := range watermarks(t, st.rdb) {
		if m[0] != m[1] {
			t.Errorf("%s indexed through %d of %d after Open", id, m[0], m[1])
		}
	}
	storetest.CheckSearchIndex(t, st)
	if diff := cmp.Diff(before, indexRows(t, st)); diff != "" {
		t.Errorf("index after the rebuild differs from before (-before +after):\n%s", diff)
	}
}

// TestOpenBesideAWriter: opening a fully indexed file while another
// process holds its write lock (an import, say) does not wait for the
// lock, and neither does a search: with nothing to file they only read.
func TestOpenBesideAWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "beside.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", storetest.NewCorpus(1).Log(20, 1764500000000)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite3", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin() // BEGIN IMMEDIATE: the write lock, held
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.Exec("UPDATE sessions SET title = title"); err != nil {
		t.Fatal(err)
	}
	st, err = Open(ctx, path, Options{Logger: quietLogger(), BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open beside a writer: %v", err)
	}
	defer st.Close()
	q, err := search.Parse("session:s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Search(ctx, q, SearchOptions{}); err != nil {
		t.Fatalf("search beside a writer: %v", err)
	}
}

// TestMigration0007KeepsOrphanRows: a search_sessions row whose session is
// gone (deleted with foreign keys off, as the sqlite3 shell does) does not
// stop the watermark's migration.
func TestMigration0007KeepsOrphanRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orphan.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, st, "s")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=0")
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	for _, q := range []string{
		"INSERT INTO search_sessions (session_id, version) VALUES ('gone', 1)",
		"ALTER TABLE search_sessions DROP COLUMN through",
		"DELETE FROM migrations WHERE name LIKE '0007%'",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	st, err = Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer st.Close()
	var through int64
	if err := st.rdb.QueryRow("SELECT through FROM search_sessions WHERE session_id = 'gone'").Scan(&through); err != nil || through != -1 {
		t.Fatalf("the orphan row's watermark: %d (%v), want -1", through, err)
	}
}

// The lag keeps each commit's batch as handed over and joins them when
// the index reads them: its counts, a trim after a yielded filing and a
// drop must come out as if every batch had been copied in at once.
func TestLagKeepsBatchesAndCounts(t *testing.T) {
	var l searchLag
	seq := int64(0)
	batch := func(n int, withFacts bool) ([]core.Event, []*core.EventFacts) {
		evs := make([]core.Event, n)
		var facts []*core.EventFacts
		for i := range evs {
			evs[i] = core.Event{Type: core.EventTodoWrite, Seq: seq, Data: []byte(`{"todos":[]}`)}
			seq++
			if withFacts {
				facts = append(facts, &core.EventFacts{})
			}
		}
		return evs, facts
	}
	for i := range 5 {
		evs, facts := batch(3, i%2 == 0)
		l.add("a", evs, facts)
	}
	evs, _ := batch(2, false)
	l.add("b", evs, nil)
	per := len(`{"todos":[]}`)
	if l.events != 17 || l.bytes != 17*per {
		t.Fatalf("after 6 batches: %d events, %d bytes; want 17, %d", l.events, l.bytes, 17*per)
	}
	l.trim("a", 6) // seqs 0–6 filed
	g := l.sessions["a"]
	if len(g.events) != 8 || len(g.facts) != 8 || g.events[0].Seq != 7 || g.events[7].Seq != 14 {
		t.Fatalf("after the trim: %d events, %d facts, seqs %d…%d; want 8, 8, 7…14", len(g.events), len(g.facts), g.events[0].Seq, g.events[len(g.events)-1].Seq)
	}
	if g.facts[1] == nil || g.facts[2] != nil { // seq 8 from a batch with facts, seq 9 from one without
		t.Fatalf("facts after the join: seq 8 %v, seq 9 %v; want set and nil", g.facts[1], g.facts[2])
	}
	evs, _ = batch(4, true)
	l.add("a", evs, nil)
	l.drop("a")
	if l.events != 2 || l.bytes != 2*per {
		t.Fatalf("after dropping a: %d events, %d bytes; want b's 2, %d", l.events, l.bytes, 2*per)
	}
}
