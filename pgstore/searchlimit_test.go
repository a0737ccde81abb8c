package pgstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"prism/core/search"
	"prism/store"
)

// TestSearchLimitIsWrittenIntoTheStatement holds that a query of
// operators alone, which runs as a statement prepared once per connection,
// has its page's limit written into the statement: with a bound LIMIT,
// PostgreSQL costs the generic plan for a tenth of the matches and, at a
// million events, plans the statement again at every search.
func TestSearchLimitIsWrittenIntoTheStatement(t *testing.T) {
	for _, tc := range []struct {
		q     string
		limit int
	}{{"tool:grep", 20}, {"error:", 50}, {"kind:call session:s1", 200}} {
		q, err := search.Parse(tc.q, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sql, args, _, words, err := querySQL(q, store.SearchOptions{Order: store.OrderTime, Limit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		if words {
			t.Fatalf("%q: planned as a query with words", tc.q)
		}
		want := " LIMIT " + strconv.Itoa(tc.limit+1) + ")"
		if !strings.Contains(sql, want) {
			t.Errorf("%q: statement %q lacks %q", tc.q, sql, want)
		}
		for _, a := range args {
			if n, ok := a.(int); ok && n == tc.limit+1 {
				t.Errorf("%q: the limit %d is bound as an argument (%v)", tc.q, n, args)
			}
		}
	}
}
