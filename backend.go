package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/logkey"
	"prism/core/model"
	"prism/core/notes"
	"prism/core/sessionlog"
	"prism/db"
	"prism/pgstore"
	"prism/store"
	"prism/web"
	"prism/web/ownerauth"
)

// sessionStore is what main needs of a session store, whichever engine:
// *db.Store (a SQLite file) or *pgstore.Store (PostgreSQL).
type sessionStore interface {
	core.EventStore
	backend.Reader
	backend.Loader
	web.ShareStore
	ImportFile(ctx context.Context, path string) ([]store.ImportResult, error)
	ImportFileWith(ctx context.Context, path string, o store.ImportOptions) ([]store.ImportResult, error)
	backend.Remover
	DeleteEndedBefore(ctx context.Context, before time.Time) ([]store.Deleted, error)
	Export(ctx context.Context, id string, w io.Writer) error
	RepairOpenTurns(ctx context.Context) ([]string, error)
	IfEmpty(ctx context.Context, fn func(ctx context.Context) error) (bool, error)
	ownerauth.Logins // the owner's login cookies, so a sign-out survives restarts and holds on every node
	// The notes beside each session's log (labels, …).
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
	RemoveNote(ctx context.Context, session, id string) (notes.Note, error)
	Close() error
}

var (
	_ sessionStore = (*db.Store)(nil)
	_ sessionStore = (*pgstore.Store)(nil)
)

// storeOptions are the settings both engines take.
type storeOptions struct {
	Logger     *slog.Logger
	Committed  func(store.Commit)
	SyncNormal bool // SQLite only
	Limits     sessionlog.Limits
	// RepairInterval is PostgreSQL's: how often a serving node looks for
	// sessions whose node is gone (pgstore.Options.RepairInterval; zero:
	// never, as the command-line tools want).
	RepairInterval time.Duration
}

// openSessionStore opens the store dsn names: PostgreSQL for a postgres://
// or postgresql:// URL, else the SQLite file at that path. This is the one
// place prism chooses its engine.
func openSessionStore(ctx context.Context, dsn string, o storeOptions) (sessionStore, error) {
	if pgstore.IsURL(dsn) {
		return pgstore.Open(ctx, dsn, pgstore.Options{Logger: o.Logger, Limits: o.Limits, Committed: o.Committed, RepairInterval: o.RepairInterval})
	}
	return db.Open(ctx, dsn, db.Options{Logger: o.Logger, SyncNormal: o.SyncNormal, Limits: o.Limits, Committed: o.Committed})
}

// openBackend builds what the web server consumes: the store (SQLite or
// PostgreSQL) as the session source, commit feed and importer (package
// backend's adapters); a registry of the built-in tools and the MCP
// servers' tools (--mcp) as the presenter; the agent runner (on PostgreSQL,
// one that forwards follow-ups and cancels to the node running a session);
// and, with --watch, a watcher of a dsh sessions directory. On an empty
// database it starts one demo session on the scripted model, so a newcomer
// sees cards move (one, however many nodes start together). The returned
// func releases everything (runner first, then the store).
func openBackend(ctx context.Context, cfg serveConfig, log *slog.Logger) (web.Deps, func(), error) {
	feed := &backend.Feed{}
	st, err := openSessionStore(ctx, cfg.DB, storeOptions{Logger: log, SyncNormal: cfg.SyncNormal, Limits: cfg.ImportLimits, Committed: feed.Publish, RepairInterval: cmp.Or(cfg.RepairInterval, pgstore.DefaultRepairInterval)})
	if err != nil {
		return web.Deps{}, nil, err
	}
	sqlite, _ := st.(*db.Store)
	if cfg.Watch != "" && sqlite == nil {
		st.Close()
		return web.Deps{}, nil, fmt.Errorf("%w: --watch needs a SQLite --db (tailing dsh sessions into PostgreSQL is not supported yet)", errUsage)
	}
	if repaired, err := st.RepairOpenTurns(ctx); err != nil {
		log.Warn("crash repair of open sessions failed", logkey.Err, err)
	} else if len(repaired) > 0 {
		log.Info("closed turns a previous run left open", logkey.Sessions, len(repaired))
	}
	mcpTools := []*core.Tool(nil)
	closeMCP := func() {}
	if cfg.mcp != nil {
		if mcpTools, closeMCP, err = cfg.mcp.open(ctx, log); err != nil {
			st.Close()
			return web.Deps{}, nil, err
		}
	}
	presenter, err := backend.Presenters(log, mcpTools...)
	if err != nil {
		closeMCP()
		st.Close()
		return web.Deps{}, nil, err
	}
	runner, approvals, closeRunner, err := cfg.agent.newAgentRunner(st, log, mcpTools...)
	if err != nil {
		closeMCP()
		st.Close()
		return web.Deps{}, nil, err
	}
	var decider web.Approvals = approvals
	if pg, ok := st.(*pgstore.Store); ok {
		runner, decider = newClusterRunner(runner.(webRunner), approvals, pg, log)
	}
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if cfg.Watch != "" {
		w := sqlite.NewWatcher(cfg.Watch, db.WatchOptions{})
		wg.Go(func() {
			if err := w.Run(bg); err != nil {
				log.Error("watch stopped", logkey.Dir, cfg.Watch, logkey.Err, err)
			}
		})
		log.Info("watching dsh sessions", logkey.Dir, cfg.Watch)
	}
	if cfg.Retain > 0 {
		wg.Go(func() { retainLoop(bg, st, cfg.Retain, time.Now, log) })
		log.Info("retention: sessions are deleted once they ended longer ago than the retention period", logkey.Retain, cfg.Retain)
	}
	release := func() {
		stopBG()
		wg.Wait()
		closeRunner()
		closeMCP()
		if err := st.Close(); err != nil {
			log.Error("close store", logkey.Err, err)
		}
	}
	demoID := ""
	if !cfg.NoDemo {
		var id string
		started, err := st.IfEmpty(ctx, func(ctx context.Context) error {
			var err error
			id, err = runner.StartSession(ctx, web.StartRequest{Prompt: model.DemoPrompt, Model: model.DemoModelName})
			return err
		})
		if err != nil {
			release()
			return web.Deps{}, nil, fmt.Errorf("start the demo session: %w", err)
		}
		if started {
			log.Info("empty database: started the scripted demo session", logkey.SessionID, id)
			demoID = id
		}
	}
	deps := web.Deps{
		Sessions:  backend.Source{Store: st},
		Commits:   feed,
		Importer:  backend.Importer{Store: st},
		Deleter:   backend.Deleter{Store: st},
		Runner:    runner,
		Approvals: decider,
		Presenter: presenter,
		Shares:    st,
		Notes:     st,
		DemoID:    demoID,

		AllowedHosts: cfg.AllowedHosts,
	}
	if f, ok := st.(backend.Finder); ok {
		deps.Search = backend.Search{Store: f}
	} else {
		// Without a Searcher the list shows no search box and /search and
		// /api/search answer 503.
		log.Warn("full-text search is off: this store has no search index")
	}
	return deps, release, nil
}
