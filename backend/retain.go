package backend

import (
	"context"
	"log/slog"
	"time"

	"prism/core/logkey"
	"prism/store"
)

// Retainer is the store retention deletes from (either engine's).
type Retainer interface {
	DeleteEndedBefore(ctx context.Context, before time.Time) ([]store.Deleted, error)
}

// Retain deletes the sessions that ended more than retain ago (see the
// store's DeleteEndedBefore) now, then once a day, until ctx ends (the
// serve command's --retain).
func Retain(ctx context.Context, st Retainer, retain time.Duration, now func() time.Time, log *slog.Logger) {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		RetainOnce(ctx, st, retain, now, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RetainOnce is one pass of Retain; it returns the deleted ids.
func RetainOnce(ctx context.Context, st Retainer, retain time.Duration, now func() time.Time, log *slog.Logger) []string {
	deleted, err := st.DeleteEndedBefore(ctx, now().Add(-retain))
	if err != nil && ctx.Err() == nil {
		log.Error("retention: delete old sessions", logkey.Err, err)
	}
	ids := make([]string, len(deleted))
	for i, d := range deleted {
		ids[i] = d.SessionID
	}
	if len(ids) > 0 {
		log.Info("retention: deleted sessions whose last event is older than the retention period", logkey.Sessions, len(ids), logkey.Retain, retain)
	}
	return ids
}
