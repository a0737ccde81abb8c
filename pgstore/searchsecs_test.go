package pgstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// fillSplit appends a corpus log to session id in transactions of n
// events, so calls and their results fall in different transactions (the
// result filed by pairResultSQL, its sections appended to its card's).
func fillSplit(t *testing.T, st *Store, id string, events, n int) {
	t.Helper()
	ctx := context.Background()
	storetest.MustCreate(t, st, id)
	log := storetest.NewCorpus(int64(len(id))).Log(events, 1764500000000)
	for len(log) > 0 {
		k := min(n, len(log))
		if err := st.AppendEvents(ctx, id, log[:k]); err != nil {
			t.Fatal(err)
		}
		log = log[k:]
	}
}

// TestSearchSectionsAreWhatTheLogGives: every document's stored sections
// (search_docs.secs) equal what its events, read back from the log, give
// — for documents filed whole in one transaction, for cards whose result
// came in a later one (the database appends it), for a second result of a
// call id and for a result whose call was never logged.
func TestSearchSectionsAreWhatTheLogGives(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	fillSplit(t, st, "whole", 300, 300)
	fillSplit(t, st, "split", 300, 3)
	storetest.AppendReusedCallIDs(t, st)
	rows, err := st.pool.Query(ctx, "SELECT d.session_id, d.seq, COALESCE(d.result_seq, -1), d.secs, d.result_seq IS NOT NULL AND d.result_seq <> d.seq FROM search_docs d WHERE d.seq >= 0")
	if err != nil {
		t.Fatal(err)
	}
	type doc struct {
		hit    store.SearchHit
		secs   []byte
		paired bool
	}
	var docs []doc
	for rows.Next() {
		var d doc
		if err := rows.Scan(&d.hit.SessionID, &d.hit.Seq, &d.hit.ResultSeq, &d.secs, &d.paired); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	paired := 0
	for _, d := range docs {
		if d.secs == nil {
			t.Fatalf("session %s seq %d: filed without its sections", d.hit.SessionID, d.hit.Seq)
		}
		got, err := decodeSections(nil, d.secs)
		if err != nil {
			t.Fatalf("session %s seq %d: %v", d.hit.SessionID, d.hit.Seq, err)
		}
		want := readAlone(ctx, t, st, &d.hit)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("session %s seq %d (result %d): sections\n%+v\nwant\n%+v", d.hit.SessionID, d.hit.Seq, d.hit.ResultSeq, got, want)
		}
		if d.paired {
			paired++
		}
	}
	if paired < 50 {
		t.Errorf("%d cards with their result among %d documents: the pairing is not exercised", paired, len(docs))
	}
}

// TestSearchSectionsRoundTrip: decodeSections reads what encodeSections
// wrote, whatever the bytes (empty, NUL, invalid UTF-8, long), and
// rejects a truncated or corrupt encoding with an error naming it.
func TestSearchSectionsRoundTrip(t *testing.T) {
	long := string(make([]byte, 300))
	secs := []search.Section{{Col: search.ColName, Label: "tool", Text: "bash"}, {Col: search.ColBody, Label: "", Text: ""},
		{Col: search.ColMore, Label: "result", Text: "a\x00b\xffc" + long}, {Col: search.ColErr, Label: "error", Text: "ToolError TOOL_TIMEOUT"}}
	b := encodeSections(secs)
	got, err := decodeSections(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, secs) {
		t.Errorf("round trip: %+v, want %+v", got, secs)
	}
	if got, err := decodeSections(nil, encodeSections(nil)); err != nil || len(got) != 0 {
		t.Errorf("no sections: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], b[:1], {byte(search.NumCols), 0, 0}, {0, 0xff}} {
		if _, err := decodeSections(nil, bad); err == nil {
			t.Errorf("%q decoded without an error", bad)
		}
	}
}

// TestUvarintIsBinaryUvarint: uvarint reads a string's bytes as
// binary.Uvarint reads them, overflows and truncations included.
func TestUvarintIsBinaryUvarint(t *testing.T) {
	cases := [][]byte{{}, {0}, {1}, {0x7f}, {0x80}, {0x80, 1}, {0xff, 0xff, 3}, binary.AppendUvarint(nil, math.MaxUint64),
		bytes.Repeat([]byte{0xff}, 9), append(bytes.Repeat([]byte{0xff}, 9), 2), append(bytes.Repeat([]byte{0xff}, 10), 1), bytes.Repeat([]byte{0x80}, 12)}
	for _, c := range cases {
		x, n := uvarint(string(c))
		wx, wn := binary.Uvarint(c)
		if x != wx || n != wn {
			t.Errorf("uvarint(%x) = %d, %d; binary.Uvarint: %d, %d", c, x, n, wx, wn)
		}
	}
}

// searchPages returns the first page of each query with words, in both
// orders (without their cursors).
func searchPages(t *testing.T, st *Store, queries []string) []store.SearchPage {
	t.Helper()
	var out []store.SearchPage
	for _, qs := range queries {
		q, err := search.Parse(qs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, order := range []string{store.OrderTime, store.OrderRank} {
			page, err := st.Search(context.Background(), q, store.SearchOptions{Order: order, Limit: 30})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Hits) == 0 {
				t.Fatalf("%q (%s): no hits", qs, order)
			}
			page.NextCursor = "" // names a document's id, which a reindex changes
			if order == store.OrderRank {
				// Equally ranked hits are ordered by their document's id,
				// which a reindex changes.
				slices.SortFunc(page.Hits, func(a, b store.SearchHit) int {
					return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.Seq, b.Seq))
				})
			}
			out = append(out, page)
		}
	}
	return out
}

var sectionQueries = []string{"config", `"connection refused"`, "tool:bash test", "tool:bash OR tool:grep OR refused", "reused OR aloneout OR twoout"}

// TestSearchSectionsMigrationRefilesDocuments: a database of the previous
// schema (without search_docs.secs, indexed under searchVersion 2) is
// upgraded when the store opens — migration 0017 adds the column and the
// reindex fills it for every document — and its searches show the same
// hits and snippets as before; a document still without its sections (as
// an older node files one) shows the snippet its events give.
func TestSearchSectionsMigrationRefilesDocuments(t *testing.T) {
	ctx := context.Background()
	st, url := newTestStore(t, Options{})
	fillSplit(t, st, "split", 400, 5)
	storetest.AppendReusedCallIDs(t, st)
	want := searchPages(t, st, sectionQueries)
	for _, q := range []string{"ALTER TABLE search_docs DROP COLUMN secs", "DELETE FROM migrations WHERE name = '0017_search_sections.sql'",
		"UPDATE search_sessions SET version = 2"} {
		if _, err := st.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()
	st = openAt(t, url, Options{})
	var missing, filed int
	if err := st.pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE secs IS NULL), count(*) FILTER (WHERE secs IS NOT NULL) FROM search_docs WHERE seq >= 0").Scan(&missing, &filed); err != nil {
		t.Fatal(err)
	}
	if missing != 0 || filed == 0 {
		t.Errorf("after the upgrade %d documents without their sections, %d with", missing, filed)
	}
	samePages(t, "after the upgrade", searchPages(t, st, sectionQueries), want)
	if _, err := st.pool.Exec(ctx, "UPDATE search_docs SET secs = NULL WHERE id % 2 = 0"); err != nil {
		t.Fatal(err)
	}
	samePages(t, "with documents filed without their sections", searchPages(t, st, sectionQueries), want)
	// Sections that do not decode, between ones that do on the same page,
	// are read from the log too.
	if _, err := st.pool.Exec(ctx, `UPDATE search_docs SET secs = '\xff00'::bytea WHERE id % 2 = 1 AND id % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	samePages(t, "with sections that do not decode", searchPages(t, st, sectionQueries), want)
	storetest.CheckSearchIndex(t, st)
}

// samePages reports the first hit of each page that differs from want's.
func samePages(t *testing.T, when string, got, want []store.SearchPage) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if len(g.Hits) != len(w.Hits) || g.RankedAmong != w.RankedAmong {
			t.Errorf("%s, page %d: %d hits ranked among %d, want %d among %d", when, i, len(g.Hits), g.RankedAmong, len(w.Hits), w.RankedAmong)
			continue
		}
		for k := range w.Hits {
			if !reflect.DeepEqual(g.Hits[k], w.Hits[k]) {
				t.Errorf("%s, page %d hit %d:\n%+v\nwant\n%+v", when, i, k, g.Hits[k], w.Hits[k])
				break
			}
		}
	}
}
