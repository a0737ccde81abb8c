package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/logkey"
	"prism/core/model"
	"prism/db"
	"prism/web"
)

// openBackend builds what the web server consumes: the SQLite store as the
// session source, commit feed and importer (package backend's adapters); a registry of the built-in
// tools and the MCP servers' tools (--mcp) as the presenter; the agent runner; and, with --watch, a watcher of
// a dsh sessions directory. On an empty database it starts one demo session
// on the scripted model, so a newcomer sees cards move. The returned func
// releases everything (runner first, then the store).
func openBackend(ctx context.Context, cfg serveConfig, log *slog.Logger) (web.Deps, func(), error) {
	feed := &backend.Feed{}
	store, err := db.Open(ctx, cfg.DB, db.Options{Logger: log, SyncNormal: cfg.SyncNormal, Limits: cfg.ImportLimits, Committed: feed.Publish})
	if err != nil {
		return web.Deps{}, nil, err
	}
	if repaired, err := store.RepairOpenTurns(ctx); err != nil {
		log.Warn("crash repair of open sessions failed", logkey.Err, err)
	} else if len(repaired) > 0 {
		log.Info("closed turns a previous run left open", logkey.Sessions, len(repaired))
	}
	mcpTools := []*core.Tool(nil)
	closeMCP := func() {}
	if cfg.mcp != nil {
		if mcpTools, closeMCP, err = cfg.mcp.open(ctx, log); err != nil {
			store.Close()
			return web.Deps{}, nil, err
		}
	}
	presenter, err := backend.Presenters(log, mcpTools...)
	if err != nil {
		closeMCP()
		store.Close()
		return web.Deps{}, nil, err
	}
	runner, approvals, closeRunner, err := cfg.agent.newAgentRunner(store, log, mcpTools...)
	if err != nil {
		closeMCP()
		store.Close()
		return web.Deps{}, nil, err
	}
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if cfg.Watch != "" {
		w := store.NewWatcher(cfg.Watch, db.WatchOptions{})
		wg.Go(func() {
			if err := w.Run(bg); err != nil {
				log.Error("watch stopped", logkey.Dir, cfg.Watch, logkey.Err, err)
			}
		})
		log.Info("watching dsh sessions", logkey.Dir, cfg.Watch)
	}
	if cfg.Retain > 0 {
		wg.Go(func() { retainLoop(bg, store, cfg.Retain, time.Now, log) })
		log.Info("retention: sessions are deleted once they ended longer ago than the retention period", logkey.Retain, cfg.Retain)
	}
	release := func() {
		stopBG()
		wg.Wait()
		closeRunner()
		closeMCP()
		if err := store.Close(); err != nil {
			log.Error("close store", logkey.Err, err)
		}
	}
	demoID := ""
	if page, err := store.ListSessions(ctx, db.ListOptions{Limit: 1}); err != nil {
		release()
		return web.Deps{}, nil, err
	} else if len(page.Sessions) == 0 && !cfg.NoDemo {
		id, err := runner.StartSession(ctx, web.StartRequest{Prompt: model.DemoPrompt, Model: model.DemoModelName})
		if err != nil {
			release()
			return web.Deps{}, nil, fmt.Errorf("start the demo session: %w", err)
		}
		log.Info("empty database: started the scripted demo session", logkey.SessionID, id)
		demoID = id
	}
	deps := web.Deps{
		Sessions:  backend.Source{Store: store},
		Commits:   feed,
		Importer:  backend.Importer{Store: store},
		Deleter:   backend.Deleter{Store: store},
		Search:    backend.Search{Store: store},
		Runner:    runner,
		Approvals: approvals,
		Presenter: presenter,
		Shares:    store,
		DemoID:    demoID,

		AllowedHosts: cfg.AllowedHosts,
	}
	return deps, release, nil
}
