package backend_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"prism/backend"
	"prism/db"
	"prism/store"
)

// TestRetainOnce: one pass deletes the sessions past retention and keeps
// the rest (the imported fixtures' last events are in 2025–2026).
func TestRetainOnce(t *testing.T) {
	ctx := context.Background()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, f := range []string{"../testdata/dsh/basic/session.jsonl", "../testdata/dsh/crashed/session.jsonl"} {
		if _, err := st.ImportFile(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	page, _ := st.ListSessions(ctx, store.ListOptions{})
	if len(page.Sessions) != 2 {
		t.Fatalf("%d sessions imported", len(page.Sessions))
	}
	newest := max(page.Sessions[0].UpdatedAt, page.Sessions[1].UpdatedAt)
	oldest := min(page.Sessions[0].UpdatedAt, page.Sessions[1].UpdatedAt)
	var oldID string
	for _, s := range page.Sessions {
		if s.UpdatedAt == oldest {
			oldID = s.ID
		}
	}
	// "now" is a day after the older one ended, less than a day after the newer.
	now := func() time.Time { return time.UnixMilli(oldest).Add(24*time.Hour + time.Millisecond) }
	if newest < now().Add(-24*time.Hour).UnixMilli() || newest == oldest {
		t.Fatalf("the fixtures' times (%d, %d) do not straddle the retention line", oldest, newest)
	}
	got := backend.RetainOnce(ctx, st, 24*time.Hour, now, slog.New(slog.DiscardHandler))
	if !slices.Equal(got, []string{oldID}) {
		t.Errorf("RetainOnce = %v, want [%s]", got, oldID)
	}
}
