// Package engine opens the session store a --db value names: PostgreSQL
// (package pgstore) for a postgres:// or postgresql:// URL, else the
// SQLite file at that path (package db). It is the one place prism
// chooses its engine, and the one package besides the commands that
// imports both: package backend adapts any store.Store through interfaces
// and must not import an engine, and main only wires. A new engine is a
// package implementing store.Store plus one line in Open.
package engine

import (
	"context"
	"log/slog"
	"time"

	"prism/db"
	"prism/pgstore"
	"prism/sources/claudecode"
	"prism/sources/codex"
	"prism/sources/dsh"
	"prism/store"
)

// Options are the settings every engine takes; a setting one engine does
// not have is ignored by the others.
type Options struct {
	// Logger receives the store's logs (default slog.Default()).
	Logger *slog.Logger
	// Committed is called after each commit (backend.Feed.Publish).
	Committed func(store.Commit)
	// SyncNormal relaxes SQLite's synchronous=FULL to NORMAL (SQLite only).
	SyncNormal bool
	// Limits bound what one imported or watched file may hold.
	Limits dsh.Limits
	// Foreign are the other agents' transcript formats import reads beside
	// prism's and dsh's, each detected by content; nil: every one prism
	// knows (Formats).
	Foreign []dsh.Foreign
	// RepairInterval is PostgreSQL's: how often a serving node looks for
	// sessions whose node is gone (pgstore.Options.RepairInterval; zero:
	// never, as the command-line tools want).
	RepairInterval time.Duration
}

// DefaultRepairInterval is how often a serving node of a PostgreSQL store
// looks for sessions whose node is gone, unless told otherwise.
const DefaultRepairInterval = pgstore.DefaultRepairInterval

// IsPostgres reports whether dsn names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(dsn string) bool { return pgstore.IsURL(dsn) }

// Open opens the store dsn names: PostgreSQL for a postgres:// or
// postgresql:// URL, else the SQLite file at that path.
func Open(ctx context.Context, dsn string, o Options) (store.Store, error) {
	if o.Foreign == nil {
		o.Foreign = Formats()
	}
	if pgstore.IsURL(dsn) {
		return pgstore.Open(ctx, dsn, pgstore.Options{Logger: o.Logger, Limits: o.Limits, Foreign: o.Foreign, Committed: o.Committed, RepairInterval: o.RepairInterval})
	}
	return db.Open(ctx, dsn, db.Options{Logger: o.Logger, SyncNormal: o.SyncNormal, Limits: o.Limits, Foreign: o.Foreign, Committed: o.Committed})
}

// Formats are the other agents' transcript formats prism imports, each
// detected by content: Claude Code's transcripts and Codex CLI's rollouts
// (plain or .jsonl.zst).
func Formats() []dsh.Foreign {
	return []dsh.Foreign{claudecode.Format(), codex.Format()}
}
