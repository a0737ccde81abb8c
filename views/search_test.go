package views_test

import (
	"context"
	"strings"
	"testing"

	"prism/core/search"
	"prism/views"
)

// TestSearchPageSaysRankedAmong: a ranked page whose search reached the
// candidate bound says the hits rank among the most recent matches; one
// that did not says nothing of it.
func TestSearchPageSaysRankedAmong(t *testing.T) {
	hits := []views.SearchHitInput{{SessionID: "s1", Kind: search.KindUser, Seq: 3, Snippet: search.Snippet{Text: "config"}}}
	for _, among := range []int{0, 10000} {
		v := views.NewSearchPage(testMeta, "config", "rank", hits)
		v.RankedAmong = among
		html, err := views.Render(context.Background(), views.SearchPage(v))
		if err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(html, "ranked among the most recent 10,000 matches")
		if said != (among > 0) {
			t.Errorf("RankedAmong %d: the page says %q: %t", among, "ranked among the most recent 10,000 matches", said)
		}
	}
}
