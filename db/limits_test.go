package db

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestImport_watcherWaitsForASlot: the watcher does not fail while uploads
// hold every slot; it waits and then ingests.
func TestImport_watcherWaitsForASlot(t *testing.T) {
	st := newTestStore(t, func(o *Options) { o.MaxImports = 1 })
	release, err := st.acquireImport(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := st.acquireImport(ctx, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a taken slot = %v, want the context's end", err)
	}
	release()
	again, err := st.acquireImport(context.Background(), true)
	if err != nil {
		t.Fatalf("waiting for a free slot: %v", err)
	}
	again()
}
