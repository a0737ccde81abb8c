package pgstore

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// TestSearchPageRowsBringTheirSnippetSections: the statements that read a
// search's page bring what its hits' snippets are made from, equal to
// what the hits' session headers and events read on their own give
// (readAlone) — for a query with words to mark (ranked, newest first, or
// operators with words) the sections of every hit of the page (not of the
// look-ahead row), for one without (operators alone, words all excluded)
// the query-free snippet each document was filed with (for neither the
// look-ahead row, whose cursor alone is used) — so no hit is read again
// one by one (storetest's suite cannot tell: Search reads a hit
// that came without its snippet from the log).
func TestSearchPageRowsBringTheirSnippetSections(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	storetest.MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", storetest.NewCorpus(1).Log(600, 1764500000000)); err != nil {
		t.Fatal(err)
	}
	const limit = 8
	for _, tc := range []struct {
		name, q, order string
		marks          bool // the query has words to mark
	}{
		{"words/rank", "config", store.OrderRank, true},
		{"words/time", "config", store.OrderTime, true},
		{"operators+words/rank", "tool:bash test", store.OrderRank, true},
		{"operators+words/time", "tool:bash OR tool:grep OR refused", store.OrderTime, true},
		{"operators", "tool:bash OR tool:grep", store.OrderTime, false},
		{"excluded", "tool:bash -config", store.OrderTime, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := search.Parse(tc.q, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := len(q.Highlights()) > 0; got != tc.marks {
				t.Fatalf("%q: words to mark %v, want %v", tc.q, got, tc.marks)
			}
			r, err := st.pageRows(ctx, q, store.SearchOptions{Order: tc.order, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if r.plan.Order != tc.order {
				t.Fatalf("%q planned in %s order, want %s", tc.q, r.plan.Order, tc.order)
			}
			if len(r.hits) != limit+1 {
				t.Fatalf("%q: %d rows, want the page and one more (%d)", tc.q, len(r.hits), limit+1)
			}
			cards := 0
			for i := range r.hits {
				h := &r.hits[i]
				if i == limit {
					if h.Snippet.Highlights != nil {
						t.Errorf("the look-ahead row (doc %d) was given a snippet", r.docs[i])
					}
					continue
				}
				want := readAlone(ctx, t, st, h)
				switch {
				case tc.marks && r.from[i] != fromSections:
					t.Fatalf("row %d (seq %d, result %d) came without its sections", i, h.Seq, h.ResultSeq)
				case tc.marks:
					if !reflect.DeepEqual(r.secs[i], want) {
						t.Errorf("row %d (seq %d): sections\n%+v\nwant\n%+v", i, h.Seq, r.secs[i], want)
					}
				case r.from[i] != fromPlain:
					t.Fatalf("row %d (seq %d, result %d) came without its filed snippet", i, h.Seq, h.ResultSeq)
				default:
					if want := search.MakeSnippet(want, nil); !reflect.DeepEqual(h.Snippet, want) {
						t.Errorf("row %d (seq %d): snippet\n%+v\nwant\n%+v", i, h.Seq, h.Snippet, want)
					}
				}
				if len(store.HitSeqs(h)) == 2 {
					cards++
				}
			}
			if cards == 0 {
				t.Error("no card (call and result) among the rows: the result's event is not checked")
			}
		})
	}
}

// readAlone reads what a hit's document was built from on its own: its
// session's header, or its events.
func readAlone(ctx context.Context, t *testing.T, st *Store, h *store.SearchHit) []search.Section {
	t.Helper()
	var header string
	if err := st.pool.QueryRow(ctx, "SELECT header FROM sessions WHERE id = $1", h.SessionID).Scan(&header); err != nil {
		t.Fatal(err)
	}
	seqs := store.HitSeqs(h)
	events, err := queryEvents(ctx, st.pool, len(seqs), eventsSQL+" WHERE session_id = $1 AND seq = ANY($2) ORDER BY seq", h.SessionID, seqs)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := store.HitSections(h, header, events)
	if err != nil {
		t.Fatal(err)
	}
	return secs
}

// TestPageOrderSortsRowsAndTheirTexts: a page's rows, in whatever order
// its statement returned them, are put best first (key, then document id,
// descending), each hit with its own id, key and text.
func TestPageOrderSortsRowsAndTheirTexts(t *testing.T) {
	keys := []float64{5, 7, 7, 1, 9}
	docs := []int64{50, 70, 71, 10, 90}
	r := pageRows{keys: slices.Clone(keys), docs: slices.Clone(docs)}
	var texts []rowSpans
	for i := range keys {
		r.hits = append(r.hits, store.SearchHit{Seq: docs[i]})
		var s rowSpans
		s[colSession] = span{off: int32(i), end: int32(i + 1)}
		texts = append(texts, s)
	}
	p := pageOrder{&r, texts}
	if sort.IsSorted(p) {
		t.Fatal("the rows are in order already: nothing is tested")
	}
	sort.Sort(p)
	if want := []int64{90, 71, 70, 50, 10}; !slices.Equal(r.docs, want) {
		t.Fatalf("documents in the order %v, want %v", r.docs, want)
	}
	for i, d := range r.docs {
		j := slices.Index(docs, d)
		if r.keys[i] != keys[j] || r.hits[i].Seq != d || texts[i][colSession].off != int32(j) {
			t.Errorf("row %d (document %d) came with key %v, hit %d, text at %d; want %v, %d, %d", i, d, r.keys[i], r.hits[i].Seq, texts[i][colSession].off, keys[j], d, j)
		}
	}
}

// TestSearchSessionWithoutTitleOrCwd: a page whose only hit is a session's
// own document with neither title nor cwd (no sections at all) shows an
// empty snippet, with words to mark or without.
func TestSearchSessionWithoutTitleOrCwd(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	h := storetest.Header("bare")
	h.Cwd = ""
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	for _, qs := range []string{"session:bare kind:session", "session:bare kind:session -nothing"} {
		q, err := search.Parse(qs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		page, err := st.Search(ctx, q, store.SearchOptions{Order: store.OrderTime})
		if err != nil {
			t.Fatalf("%q: %v", qs, err)
		}
		want := search.Snippet{Highlights: [][2]int{}}
		if len(page.Hits) != 1 || page.Hits[0].Seq != -1 || !reflect.DeepEqual(page.Hits[0].Snippet, want) {
			t.Errorf("%q: %+v, want the session's own document with an empty snippet", qs, page.Hits)
		}
	}
}
