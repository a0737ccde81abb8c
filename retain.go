package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"prism/core/logkey"
	"prism/db"
)

// parseRetain reads a --retain value: a Go duration ("36h") or a number of
// days ("30d"); "" or "0" is off. Anything under an hour is refused: a
// typo must not delete a day's sessions.
func parseRetain(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: --retain %q: want a positive number of days (30d) or a duration (72h)", errUsage, s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%w: --retain %q: want a positive number of days (30d) or a duration (72h)", errUsage, s)
		}
	}
	if d < time.Hour {
		return 0, fmt.Errorf("%w: --retain %q: at least 1h", errUsage, s)
	}
	return d, nil
}

// retainLoop deletes the sessions that ended more than retain ago (see
// db.Store.DeleteEndedBefore) now, then once a day, until ctx ends.
func retainLoop(ctx context.Context, store *db.Store, retain time.Duration, now func() time.Time, log *slog.Logger) {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		retainOnce(ctx, store, retain, now, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// retainOnce is one pass of retainLoop; it returns the deleted ids.
func retainOnce(ctx context.Context, store *db.Store, retain time.Duration, now func() time.Time, log *slog.Logger) []string {
	deleted, err := store.DeleteEndedBefore(ctx, now().Add(-retain))
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
