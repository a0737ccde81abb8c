package db

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"prism/core/search"
	"prism/store"
)

// TestPlainStmtsKeepOneTextPerShape: the statement of an operator-only
// page is the one built for its own shape — conditions, sessions joined,
// cursor, rows — whichever shapes were cached before it; it is built once
// per shape, at most plainStmtCap shapes are kept, and a shape beyond the
// bound (or with more conditions than a key holds) still gets its own.
func TestPlainStmtsKeepOneTextPerShape(t *testing.T) {
	build := func(s searchSQL, extra []string, n int) string {
		return plainPageSelect + newestTop(s, extra, n) + plainPageFrom
	}
	var shapes []searchSQL
	for _, qs := range []string{"tool:grep", "tool:gr*", "error:", "error:TOOL_TIMEOUT", "status:ended", "kind:call tool:bash", "tool:bash -kind:call error:", "tool:bash -refused"} {
		q, err := search.Parse(qs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, compile(q))
	}
	if !shapes[4].sessions || len(shapes[6].where) <= len(plainStmtKey{}.where) {
		t.Fatalf("the shapes lack a sessions join or one with more conditions than a key holds: %+v", shapes)
	}
	cursor, _ := cursorConds(&store.SearchCursor{Key: 1, Doc: 2})
	var c plainStmts
	for round := 0; round < 2; round++ {
		for _, s := range shapes {
			for _, extra := range [][]string{nil, cursor} {
				for _, n := range []int{2, 21, 51} {
					if got, want := c.text(s, extra, n), build(s, extra, n); got != want {
						t.Fatalf("round %d, %v cursor %v rows %d: statement\n%s\nwant\n%s", round, s.where, extra != nil, n, got, want)
					}
				}
			}
		}
		// Every shape but the one with three conditions, once each.
		if got, want := c.len(), (len(shapes)-1)*2*3; got != want {
			t.Fatalf("round %d: %d statements kept, want %d (one per shape)", round, got, want)
		}
	}
	for n := 100; n < 100+2*plainStmtCap; n++ {
		if got, want := c.text(shapes[0], nil, n), build(shapes[0], nil, n); got != want {
			t.Fatalf("rows %d: statement\n%s\nwant\n%s", n, got, want)
		}
	}
	if got := c.len(); got != plainStmtCap {
		t.Errorf("%d statements kept after %d shapes, want the bound %d", got, 42+2*plainStmtCap, plainStmtCap)
	}
	if s := c.text(shapes[0], nil, 21); !strings.Contains(s, "LIMIT "+fmt.Sprint(21)) {
		t.Errorf("a kept shape's statement %q lost its limit", s)
	}
}
