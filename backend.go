package main

import (
	"context"
	"log/slog"

	"prism/web"
	"prism/web/memstore"
)

// openBackend builds what the web server consumes. Until the SQLite store
// is wired in here (db.Open(cfg.DB) → its SessionSource, CommitFeed and
// Importer, core's registry as the presenter, the agent runner), it serves
// an in-memory store with the demo session, so `prism` alone shows cards
// moving. The returned func releases the backend.
func openBackend(ctx context.Context, cfg serveConfig, log *slog.Logger) (web.Deps, func(), error) {
	store := memstore.New()
	log.Warn("no database yet: serving an in-memory store (--db is not used)", "db", cfg.DB)
	demoCtx, cancel := context.WithCancel(ctx)
	if err := memstore.StartDemo(demoCtx, store, log); err != nil {
		cancel()
		return web.Deps{}, nil, err
	}
	deps := web.Deps{
		Sessions:  store,
		Commits:   store,
		Importer:  store,
		Presenter: memstore.Presenter{},
	}
	return deps, cancel, nil
}
