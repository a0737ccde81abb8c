package db

import (
	"context"
	"fmt"
	"testing"
	"time"

	"prism/core"
	"prism/core/search"
)

// FuzzSearch runs what Parse accepts against a real index, in both orders,
// with whatever cursor the fuzzer makes up: a query the parser accepted
// never fails in SQLite, a made-up cursor is refused as invalid input, and
// every hit names a session of the store.
func FuzzSearch(f *testing.F) {
	st := newTestStore(f)
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		id := fmt.Sprint("fz-", i)
		mustCreate(f, st, id)
		if err := st.AppendEvents(ctx, id, turnEvents(0, 1, i%2 == 0)); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range [][2]string{
		{"grep", ""}, {`"a b" -c tool:x error: status:idle`, "x"}, {"NEAR(a b)", ""}, {"*", ""},
		{"tool:bash -error:", ""}, {"session:fz-1 after:2020-01-01", "eyJ0IjoxfQ"}, {"日本語 fmt.Sprintf", ""},
	} {
		f.Add(s[0], s[1], false)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, query, cursor string, byTime bool) {
		q, err := search.Parse(query, now)
		if err != nil {
			return // FuzzParse holds the refusals to their form
		}
		o := SearchOptions{Cursor: cursor, Limit: 5, Order: OrderRank}
		if byTime {
			o.Order = OrderTime
		}
		page, err := st.Search(ctx, q, o)
		if err != nil {
			if cursor != "" && core.ErrorCode(err) == core.CodeInvalid {
				return
			}
			t.Fatalf("Search(%q, cursor %q): %v (code %s)", query, cursor, err, core.ErrorCode(err))
		}
		for _, h := range page.Hits {
			if len(h.SessionID) != 4 || h.SessionID[:3] != "fz-" {
				t.Fatalf("Search(%q): a hit in session %q", query, h.SessionID)
			}
		}
	})
}
