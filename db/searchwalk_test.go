package db

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"prism/core/search"
	"prism/store/storetest"
)

// TestNewestMatchesPlans holds newestMatches' two plans (the time index
// walked, or the matches joined and sorted; walkTime chooses) to the same
// documents in the same order as the plain join, on a log whose times run
// against the documents' ids (sessions appended newest first), for
// bounds that choose either plan, with and without a cursor.
func TestNewestMatchesPlans(t *testing.T) {
	st := newTestStore(t)
	ctx := context.Background()
	c := storetest.NewCorpus(3)
	for i := range 12 {
		id := fmt.Sprintf("w%02d", i)
		if err := st.CreateSession(ctx, storetest.Header(id)); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendEvents(ctx, id, c.Log(60, 1764500000000-int64(i)*3_600_000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	ids := func(query string, args ...any) []int64 {
		t.Helper()
		rows, err := st.rdb.QueryContext(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id, at int64
			if err := rows.Scan(&id, &at); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	walked := 0
	for _, word := range []string{"config", c.Vocab(1), c.Vocab(400), "zzzzunmatched"} {
		q, err := search.Parse(word, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		s := compile(q)
		var matches int
		if err := st.rdb.QueryRow(matchCTE+"SELECT count(*) FROM m", s.match).Scan(&matches); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 21, 500} {
			for _, cursor := range []bool{false, true} {
				var extra []string
				var extraArgs []any
				if cursor {
					extra = []string{"(d.time < ? OR (d.time = ? AND d.id < ?))"}
					at := int64(1764500000000 - 5*3_600_000)
					extraArgs = []any{at, at, int64(1 << 40)}
				}
				got, gargs := newestMatches(s, extra, extraArgs, n)
				want := ids(matchCTE+"SELECT d.id, d.time FROM m JOIN search_docs d ON d.id = m.docid"+where(extra)+" ORDER BY d.time DESC, d.id DESC LIMIT ?",
					append(append([]any{s.match}, extraArgs...), n)...)
				have := ids(matchCTE+got, append([]any{s.match}, gargs...)...)
				if !slices.Equal(have, want) {
					t.Errorf("%q n=%d cursor=%v (%d matches): %v, want %v", word, n, cursor, matches, have, want)
				}
				var docs int64
				st.rdb.QueryRow("SELECT max(id) FROM search_docs").Scan(&docs)
				if int64(4*matches*matches) > int64(n)*docs {
					walked++
				}
			}
		}
	}
	if walked == 0 {
		t.Fatal("no case walked the time index")
	}
}
