package pgstore

import (
	"context"
	"fmt"
	"testing"

	"prism/store"
	"prism/store/storetest"
)

// BenchmarkListSessions: on PostgreSQL, one page of ListSessions over 100 and 1,000
// sessions (all of them on the page), as the list, the board and
// /api/sessions ask for it; "header" asks for the headers too
// (ListOptions.WithHeader: each read and decoded), the cost every list
// paid before.
func BenchmarkListSessions(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			st, _ := newTestStore(b, Options{})
			storetest.SeedList(b, st, n)
			for _, c := range []struct {
				name string
				o    store.ListOptions
			}{
				{"summary", store.ListOptions{Limit: n}},
				{"header", store.ListOptions{Limit: n, WithHeader: true}},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						page, err := st.ListSessions(ctx, c.o)
						if err != nil || len(page.Sessions) != n {
							b.Fatalf("ListSessions: %d sessions, %v", len(page.Sessions), err)
						}
					}
				})
			}
		})
	}
}
