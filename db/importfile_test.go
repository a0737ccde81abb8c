package db

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/sources/dsh"
	"prism/store"
	"prism/store/storetest"
)

// fullIndexRows lists a store's search index as the file holds it:
// search_docs' rows whole (id, snippet and card number included) with
// their search_fts terms, by docid.
func fullIndexRows(t *testing.T, st *Store) []string {
	t.Helper()
	rows, err := st.rdb.Query(`SELECT d.id, d.session_id, d.seq, d.kind, COALESCE(d.call_id, '<null>'), COALESCE(d.tool, '<null>'),
		COALESCE(d.result_seq, '<null>'), COALESCE(d.error, '<null>'), d.time, COALESCE(d.snip, '<null>'), d.card,
		f.name, f.body, f.more, f.err
		FROM search_docs d LEFT JOIN search_fts f ON f.docid = d.id ORDER BY d.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cols [15]any
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
	var fts int
	if err := st.rdb.QueryRow(`SELECT count(*) FROM search_fts`).Scan(&fts); err != nil {
		t.Fatal(err)
	}
	if fts != len(out) {
		t.Fatalf("search_fts holds %d rows for %d documents", fts, len(out))
	}
	return out
}

// writeJSONL writes a prism JSONL file of one session and returns its path.
func writeJSONL(t *testing.T, dir string, h core.SessionHeader, log []core.Event) string {
	t.Helper()
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, h, log); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", h.ID, len(log)))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportFilingItsIndexEqualsTheLag: the same files imported into two
// stores — one filing each file's search documents in its own transaction
// (ImportOptions.FileIndex, as prism import does: documents prepared
// before the transaction), the other through the writer's lag after each
// commit — give the same index: the same rows, ids, snippets, card numbers
// and terms. The files hold reused call ids, second results, results
// without a call, failures, a call left waiting, a retitle, text-heavy
// corpus sessions, a session extended by a longer file, and a replaced
// log.
func TestImportFilingItsIndexEqualsTheLag(t *testing.T) {
	ctx := context.Background()
	call := func(seq int64, id, word string) core.Event {
		return storetest.Ev(seq, core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":%q,"name":"bash","arguments":"{\"command\":\"echo %s\"}"}`, id, word))
	}
	result := func(seq int64, id, word string, isError bool) core.Event {
		return storetest.Ev(seq, core.EventToolResult, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"m%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%q}],"isError":%t}],"source":{"kind":"tool","callId":%q}}}`, seq, id, word, isError, id))
	}
	pairs := []core.Event{
		storetest.Ev(0, core.EventTurnStart, `{"turn":1,"input":[{"role":"user","content":[{"type":"text","text":"pair the cards"}]}]}`),
		call(1, "c", "first"), result(2, "c", "firstout", false),
		call(3, "c", "second"), result(4, "c", "secondout", true), result(5, "c", "extraout", false),
		result(6, "orphan", "orphanout", false), call(7, "d", "early"), call(8, "d", "late"),
		result(9, "d", "lateout", false), result(10, "d", "earlyout", false), call(11, "e", "never"),
		storetest.Ev(12, core.EventSessionTitle, `{"title":"the pairs, retitled"}`),
	}
	dir := t.TempDir()
	var files []string
	files = append(files, writeJSONL(t, dir, storetest.Header("pairs"), pairs))
	for g := range 4 {
		c := storetest.NewCorpus(int64(g))
		h := storetest.Header(fmt.Sprint("corpus", g))
		h.Cwd = "/work/" + c.Word()
		log := c.Log(300, 1764500000000+int64(g))
		if g == 0 {
			// A prefix that ends a turn first, then the whole log: the
			// second import extends the session.
			cut := 0
			for i, e := range log[:len(log)/2] {
				if e.Type == core.EventTurnEnd {
					cut = i + 1
				}
			}
			if cut == 0 {
				t.Fatal("no turn ends in the first half of the corpus log")
			}
			files = append(files, writeJSONL(t, dir, h, log[:cut]))
		}
		files = append(files, writeJSONL(t, dir, h, log))
	}
	// The pairs again under the id of a corpus session, replacing it.
	replacing := writeJSONL(t, dir, storetest.Header("corpus1"), pairs)

	open := func(name string) *Store {
		st, err := Open(ctx, filepath.Join(dir, name), Options{Logger: quietLogger(), SyncNormal: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		lagForever(t, st)
		return st
	}
	lagged, filing := open("lagged.db"), open("filing.db")
	for _, f := range append(files, replacing) {
		o := store.ImportOptions{Replace: f == replacing}
		if _, err := lagged.ImportFileWith(ctx, f, o); err != nil {
			t.Fatal(err)
		}
		o.FileIndex = true
		if _, err := filing.ImportFileWith(ctx, f, o); err != nil {
			t.Fatal(err)
		}
		// The import filed its documents: nothing lags behind it.
		filing.w.mu.Lock()
		lag := filing.w.lag.events
		filing.w.mu.Unlock()
		if lag != 0 {
			t.Fatalf("after importing %s with FileIndex, %d events lag the index", filepath.Base(f), lag)
		}
	}
	if err := lagged.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	want, got := fullIndexRows(t, lagged), fullIndexRows(t, filing)
	if len(want) < 300 {
		t.Fatalf("the index holds %d documents: the test proves little", len(want))
	}
	for _, w := range []string{"orphanout", "echo never", "extraout"} {
		if !strings.Contains(strings.Join(want, "\n"), w) {
			t.Fatalf("the index lacks %s: the test proves little", w)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the index filed by the imports differs from the lag's (-lag +import):\n%s", diff)
	}
	storetest.CheckSearchIndex(t, filing)
}

// synchronousNow reads the writer connection's synchronous setting (1
// NORMAL, 2 FULL) and its wal_autocheckpoint between two of its
// transactions.
func synchronousNow(t *testing.T, st *Store) (sync, autocheckpoint int) {
	t.Helper()
	st.w.mu.Lock()
	defer st.w.mu.Unlock()
	if err := st.w.conn.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := st.w.conn.QueryRowContext(context.Background(), "PRAGMA wal_autocheckpoint").Scan(&autocheckpoint); err != nil {
		t.Fatal(err)
	}
	return sync, autocheckpoint
}

// TestRelaxedImportCommitsAtNormalAndSyncCommitsAtFull: an import with
// ImportOptions.Relaxed commits at synchronous=NORMAL, the writer's next
// transaction at FULL again; Sync commits a change at FULL (another
// connection sees the file's data_version move) and leaves the data as it
// was.
func TestRelaxedImportCommitsAtNormalAndSyncCommitsAtFull(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "relaxed.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := storetest.NewCorpus(5).Log(40, 1764500000000)
	file := writeJSONL(t, dir, storetest.Header("relaxed"), log)
	if _, err := st.ImportFileWith(ctx, file, store.ImportOptions{Relaxed: true}); err != nil {
		t.Fatal(err)
	}
	if sync, ckpt := synchronousNow(t, st); sync != 1 || ckpt != 0 {
		t.Fatalf("after a relaxed import the writer is at synchronous=%d, wal_autocheckpoint=%d; want 1 (NORMAL), 0 (put off)", sync, ckpt)
	}
	var inTx, ckptInTx int
	if err := st.write(ctx, func(t *wtx) error {
		if err := t.tx.QueryRow("PRAGMA synchronous").Scan(&inTx); err != nil {
			return err
		}
		return t.tx.QueryRow("PRAGMA wal_autocheckpoint").Scan(&ckptInTx)
	}); err != nil {
		t.Fatal(err)
	}
	if inTx != 2 || ckptInTx != 1000 {
		t.Errorf("the write after a relaxed import ran at synchronous=%d, wal_autocheckpoint=%d; want 2 (FULL), 1000", inTx, ckptInTx)
	}
	if _, err := st.ImportFileWith(ctx, writeJSONL(t, dir, storetest.Header("durable"), log), store.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if sync, ckpt := synchronousNow(t, st); sync != 2 || ckpt != 1000 {
		t.Errorf("after an import that is not relaxed the writer is at synchronous=%d, wal_autocheckpoint=%d; want 2 (FULL), 1000", sync, ckpt)
	}

	other, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	version := func() (v int64) {
		if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var userVersion int64
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ImportFileWith(ctx, writeJSONL(t, dir, storetest.Header("relaxed2"), log), store.ImportOptions{Relaxed: true}); err != nil {
		t.Fatal(err)
	}
	before := version()
	if err := st.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if version() == before {
		t.Error("Sync committed nothing: data_version did not move")
	}
	if sync, _ := synchronousNow(t, st); sync != 2 {
		t.Errorf("after Sync the writer is at synchronous=%d, want 2 (FULL)", sync)
	}
	var after int64
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != userVersion {
		t.Errorf("Sync changed user_version from %d to %d", userVersion, after)
	}
	for _, id := range []string{"relaxed", "durable", "relaxed2"} {
		sl, err := st.LoadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(sl.Events) != len(log) {
			t.Errorf("session %s holds %d events, want %d", id, len(sl.Events), len(log))
		}
	}
}
