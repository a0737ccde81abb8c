package db

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// TestSearchPageRowsBringTheirSnippetSections: the statement that reads
// a page's hits brings what their snippets are made from — for a query
// with words (ranked, or newest first) the sections of every hit of the
// page (not of the look-ahead row), for operators with words to mark the
// events — equal to what the hit's events read on their own give
// (hitSections), so no hit is read again one by one.
func TestSearchPageRowsBringTheirSnippetSections(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "page.db"), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", storetest.NewCorpus(1).Log(600, 1764500000000)); err != nil {
		t.Fatal(err)
	}
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	const limit = 8
	check := func(t *testing.T, found []hitRow, withWords bool) {
		t.Helper()
		if len(found) != limit+1 {
			t.Fatalf("found %d rows, want the page and one more (%d)", len(found), limit+1)
		}
		cards := 0
		for i, r := range found {
			if withWords && i == limit {
				if r.sectioned {
					t.Errorf("the look-ahead row (doc %d) was made into sections", r.doc)
				}
				continue
			}
			want, err := hitSections(ctx, st.rdb, &r.hit)
			if err != nil {
				t.Fatal(err)
			}
			got := r.secs
			switch {
			case withWords && !r.sectioned:
				t.Fatalf("row %d (seq %d, result %d) came without its sections", i, r.hit.Seq, r.hit.ResultSeq)
			case !withWords:
				if !r.read {
					t.Fatalf("row %d (seq %d, result %d) came without its events", i, r.hit.Seq, r.hit.ResultSeq)
				}
				if got, err = store.HitSections(&r.hit, r.header, r.events); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("row %d (seq %d): sections\n%+v\nwant\n%+v", i, r.hit.Seq, got, want)
			}
			if len(store.HitSeqs(&r.hit)) == 2 {
				cards++
			}
		}
		if cards == 0 {
			t.Error("no card (call and result) among the rows: the result's event is not checked")
		}
	}
	parse := func(q string) searchSQL {
		parsed, err := search.Parse(q, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return compile(parsed)
	}
	for _, order := range []string{OrderRank, OrderTime} {
		t.Run("words/"+order, func(t *testing.T) {
			s := parse("config")
			tx, err := st.rdb.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck // read-only
			var found []hitRow
			if order == OrderRank {
				found, _, err = rankedHits(ctx, tx, s, nil, limit+1, store.RankCandidates)
			} else {
				found, err = newestMatchHits(ctx, tx, s, nil, limit+1)
			}
			if err != nil {
				t.Fatal(err)
			}
			check(t, found, true)
		})
	}
	t.Run("operators", func(t *testing.T) {
		found, err := newestHits(ctx, st.rdb, parse("tool:bash OR tool:grep"), nil, limit+1)
		if err != nil {
			t.Fatal(err)
		}
		check(t, found, false)
	})
}
