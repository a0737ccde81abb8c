package db

import (
	"testing"

	"prism/store/storetest"
)

// FuzzSearch runs storetest's search fuzz target on SQLite.
func FuzzSearch(f *testing.F) { storetest.FuzzSearch(f, newTestStore(f)) }
