package db

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// TestStoredTextRoundTrip: a document's sections come back from their
// stored text as they went in — compressed or not, any bytes in a text,
// a label core/search does not write — and a damaged text is refused with
// what is wrong, not read as other sections.
func TestStoredTextRoundTrip(t *testing.T) {
	long := strings.Repeat("go test ./... returned 1 error ", 400)
	for _, secs := range [][]search.Section{
		{{Col: search.ColName, Label: "tool", Text: "bash"}},
		{{Col: search.ColBody, Label: "arguments", Text: "command: ls\n"}, {Col: search.ColMore, Label: "result", Text: long}},
		{{Col: search.ColBody, Label: "text", Text: "héllo 世界 \x00 12:34 a b"}, {Col: search.ColErr, Label: "error", Text: "E 1"}},
		{{Col: search.ColBody, Label: "a label of its own", Text: ""}, {Col: search.ColMore, Label: "reasoning", Text: "x"}},
	} {
		enc, ok := encodeText(secs).([]byte)
		if !ok {
			t.Fatalf("encodeText(%d sections) = %T, want bytes", len(secs), encodeText(secs))
		}
		var d textDecoder
		got, err := d.decode(nil, enc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, secs) {
			t.Errorf("decoded\n%+v\nwant\n%+v", got, secs)
		}
		if len(long) > 1000 && strings.Contains(secs[len(secs)-1].Text, long) && enc[0] != textS2 {
			t.Errorf("a repetitive text of %d bytes was stored uncompressed (%d bytes)", len(long), len(enc))
		}
	}
	// A card's call's text and its result's, read as one.
	call := []search.Section{{Col: search.ColName, Label: "tool", Text: "bash"}}
	result := []search.Section{{Col: search.ColMore, Label: "result", Text: long}}
	var d textDecoder
	if got, err := d.decode(nil, encodeText(call).([]byte), nil, encodeText(result).([]byte)); err != nil || !reflect.DeepEqual(got, append(call, result...)) {
		t.Errorf("a call's and a result's texts decode to %d sections (%v), want the call's and the result's", len(got), err)
	}
	if got := encodeText(nil); got != nil {
		t.Errorf("encodeText(no sections) = %v, want nil (no row)", got)
	}
	for _, bad := range []struct{ text, want string }{
		{"\x0014:text10:short", "text of the section at byte 0 is cut short"},
		{"\x0014:text1:x1", "the label of the section at byte 10 is cut short"},
		{"\x0094:text1:x", "column"},
		{"\x0014:text", "cut short"},
		{"\x0014:text99999999999999999999:x", "cut short"},
		{"\x07", "unknown encoding"},
		{"\x01\xff\xff", "stored text"},
	} {
		var d textDecoder
		if _, err := d.decode(nil, []byte(bad.text)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("decode(%q) = %v, want an error saying %q", bad.text, err, bad.want)
		}
	}
}

// searchPages returns the first page of each query, in rank and time order.
func searchPages(t *testing.T, st *Store, queries []string) map[string]SearchPage {
	t.Helper()
	pages := map[string]SearchPage{}
	for _, q := range queries {
		parsed, err := search.Parse(q, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, order := range []string{OrderRank, OrderTime} {
			page, err := st.Search(context.Background(), parsed, SearchOptions{Order: order, Limit: 30})
			if err != nil {
				t.Fatalf("Search(%q, %s): %v", q, order, err)
			}
			if len(page.Hits) == 0 {
				t.Fatalf("Search(%q, %s) found nothing", q, order)
			}
			pages[q+" "+order] = page
		}
	}
	return pages
}

// textQueries have words: their snippets are made from the documents'
// sections. (config: messages and cards; refused: bash results; three and
// threeout: cards of a reused call id; aloneout: a result whose call was
// never logged.)
var textQueries = []string{"config", `"connection refused"`, "tool:bash refused", "fmt.Sprintf", "threeout OR twoout OR three", "aloneout"}

// fillText stores a corpus session in two appends split between a call
// and its result (so that the card's result is filed by a later index
// transaction than its call) and the sessions of reused call ids.
func fillText(t *testing.T, st *Store) {
	t.Helper()
	ctx := context.Background()
	log := storetest.NewCorpus(1).Log(400, 1764500000000)
	split := 0
	for i := len(log) / 2; i < len(log); i++ {
		if log[i].Type == core.EventToolCall {
			split = i + 1
			break
		}
	}
	storetest.MustCreate(t, st, "s")
	for _, part := range [][]core.Event{log[:split], log[split:]} {
		if err := st.AppendEvents(ctx, "s", part); err != nil {
			t.Fatal(err)
		}
		if err := st.catchUpIndex(ctx); err != nil {
			t.Fatal(err)
		}
	}
	storetest.AppendReusedCallIDs(t, st)
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSearchSnippetsFromStoredTextEqualTheLog: a page's snippets made from
// its documents' stored texts are the snippets made from their events
// (every text deleted: the page reads the events, as before migration
// 0019), for cards filed whole, a card whose result came in a later index
// transaction, reused call ids and a result alone; and the page's rows
// did come from the texts.
func TestSearchSnippetsFromStoredTextEqualTheLog(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "text.db"), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fillText(t, st)
	var docs, texts, results int
	if err := st.rdb.QueryRow("SELECT (SELECT count(*) FROM search_docs WHERE seq >= 0), (SELECT count(*) FROM search_text), (SELECT count(*) FROM search_text WHERE result_secs IS NOT NULL)").Scan(&docs, &texts, &results); err != nil {
		t.Fatal(err)
	}
	if texts != docs || results == 0 {
		t.Fatalf("%d texts (%d with a result's) for %d documents of events, want one each and some cards'", texts, results, docs)
	}
	fromText := searchPages(t, st, textQueries)

	// The rows of a page came from the stored texts.
	tx, err := st.rdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := search.Parse("config", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	found, _, err := rankedHits(ctx, tx, compile(q), nil, 21, store.RankCandidates)
	tx.Rollback() //nolint:errcheck // read-only
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range found[:20] {
		if r.hit.Seq >= 0 && !r.stored {
			t.Errorf("row %d (seq %d) was not made from its stored text", i, r.hit.Seq)
		}
	}

	if _, err := st.wdb.Exec("DELETE FROM search_text"); err != nil {
		t.Fatal(err)
	}
	fromLog := searchPages(t, st, textQueries)
	for k, want := range fromLog {
		if got := fromText[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: from the stored texts\n%+v\nfrom the log\n%+v", k, got, want)
		}
	}
	storetest.CheckSearchIndex(t, st)
}

// TestSearchTextMigration: a database indexed before migration 0019
// (under searchVersion 2, without the table) opens with the table and
// every document of an event refiled with its text, its hits' snippets
// unchanged.
func TestSearchTextMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	fillText(t, st)
	before := searchPages(t, st, textQueries)
	// The schema and the index rules before 0019.
	for _, q := range []string{"DROP TABLE search_text", "DELETE FROM migrations WHERE name = '0019_search_text.sql'", "UPDATE search_sessions SET version = 2"} {
		if _, err := st.wdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = Open(ctx, path, Options{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var docs, texts int
	if err := st.rdb.QueryRow("SELECT (SELECT count(*) FROM search_docs WHERE seq >= 0), (SELECT count(*) FROM search_text)").Scan(&docs, &texts); err != nil {
		t.Fatal(err)
	}
	if docs == 0 || texts != docs {
		t.Fatalf("%d texts after the migration for %d documents of events, want one each", texts, docs)
	}
	// Refiled documents have new ids (ties rank by id, cursors name
	// them): each hit found before and after has the same snippet.
	for k, page := range searchPages(t, st, textQueries) {
		was := map[string]SearchHit{}
		for _, h := range before[k].Hits {
			was[fmt.Sprint(h.SessionID, h.Seq)] = h
		}
		same := 0
		for _, h := range page.Hits {
			w, ok := was[fmt.Sprint(h.SessionID, h.Seq)]
			if !ok {
				continue
			}
			same++
			if !reflect.DeepEqual(h, w) {
				t.Errorf("%s: after the migration %+v, before %+v", k, h, w)
			}
		}
		if same < len(page.Hits)/2 {
			t.Errorf("%s: %d of %d hits found before the migration too", k, same, len(page.Hits))
		}
	}
	storetest.CheckSearchIndex(t, st)
}

// TestSearchTextOfACardWhoseCallHasNone: a card whose call was filed
// without a text (no row: filed before its table existed, or with no
// sections) gets none when its result is filed by a later index
// transaction, and its snippet is made from its events.
func TestSearchTextOfACardWhoseCallHasNone(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "text.db"), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.MustCreate(t, st, "old")
	if err := st.AppendEvents(ctx, "old", []core.Event{
		{Seq: 0, Type: core.EventToolCall, Time: 1, Data: []byte(`{"callId":"c1","name":"bash","arguments":"{\"command\":\"make config\"}"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.wdb.Exec("DELETE FROM search_text"); err != nil {
		t.Fatal(err)
	}
	result := core.Event{Seq: 1, Type: core.EventToolResult, Time: 2, SurfaceOp: core.AppendOp(),
		Data: []byte(`{"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"config written"}]}],"source":{"kind":"tool","callId":"c1"}}}`)}
	if err := st.AppendEvents(ctx, "old", []core.Event{result}); err != nil {
		t.Fatal(err)
	}
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	var texts int
	if err := st.rdb.QueryRow("SELECT count(*) FROM search_text").Scan(&texts); err != nil {
		t.Fatal(err)
	}
	if texts != 0 {
		t.Errorf("%d texts, want none: the card's call was filed without one", texts)
	}
	page := searchPages(t, st, []string{"config"})["config "+OrderRank]
	if len(page.Hits) != 1 || page.Hits[0].Snippet.Label != "arguments" && page.Hits[0].Snippet.Label != "result" {
		t.Errorf("config finds %+v, want the card with its snippet", page.Hits)
	}
	storetest.CheckSearchIndex(t, st)
}

// TestSearchTextGoesWithItsDocuments: a deleted session's documents take
// their texts with them (the foreign key's cascade); the other session's
// stay.
func TestSearchTextGoesWithItsDocuments(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "text.db"), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fillText(t, st)
	if _, err := st.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var orphans, left int
	if err := st.rdb.QueryRow("SELECT (SELECT count(*) FROM search_text WHERE id NOT IN (SELECT id FROM search_docs)), (SELECT count(*) FROM search_text)").Scan(&orphans, &left); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || left == 0 {
		t.Errorf("%d texts whose document is gone (%d left in all), want none (and the other sessions')", orphans, left)
	}
}
