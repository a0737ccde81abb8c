package pgstore

import (
	"testing"

	"prism/store/storetest"
)

// FuzzSearch runs storetest's search fuzz target on PostgreSQL: whatever
// query the parser accepts becomes a tsquery PostgreSQL takes.
func FuzzSearch(f *testing.F) {
	st, _ := newTestStore(f, Options{})
	storetest.FuzzSearch(f, st)
}
