package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"prism/core"
	"prism/core/model"
	"prism/core/tools"
	"prism/db"
	"prism/web"
)

// demoPrompt starts the scripted demo session of an empty database.
const demoPrompt = "Find why the tests fail and fix it."

// openBackend builds what the web server consumes: the SQLite store as the
// session source, commit feed and importer; a registry of the built-in
// tools as the presenter; the agent runner; and, with --watch, a watcher of
// a dsh sessions directory. On an empty database it starts one demo session
// on the scripted model, so a newcomer sees cards move. The returned func
// releases everything (runner first, then the store).
func openBackend(ctx context.Context, cfg serveConfig, log *slog.Logger) (web.Deps, func(), error) {
	feed := &commitFeed{}
	store, err := db.Open(ctx, cfg.DB, db.Options{Logger: log, SyncNormal: cfg.SyncNormal, Limits: cfg.ImportLimits, Committed: feed.publish})
	if err != nil {
		return web.Deps{}, nil, err
	}
	if repaired, err := store.RepairOpenTurns(ctx); err != nil {
		log.Warn("crash repair of open sessions failed", "err", err)
	} else if len(repaired) > 0 {
		log.Info("closed turns a previous run left open", "sessions", len(repaired))
	}
	presenter, err := presentationRegistry(log)
	if err != nil {
		store.Close()
		return web.Deps{}, nil, err
	}
	runner, closeRunner, err := cfg.agent.newAgentRunner(store, log)
	if err != nil {
		store.Close()
		return web.Deps{}, nil, err
	}
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if cfg.Watch != "" {
		w := store.NewWatcher(cfg.Watch, db.WatchOptions{})
		wg.Go(func() {
			if err := w.Run(bg); err != nil {
				log.Error("watch stopped", "dir", cfg.Watch, "err", err)
			}
		})
		log.Info("watching dsh sessions", "dir", cfg.Watch)
	}
	release := func() {
		stopBG()
		wg.Wait()
		closeRunner()
		if err := store.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}
	if page, err := store.ListSessions(ctx, db.ListOptions{Limit: 1}); err != nil {
		release()
		return web.Deps{}, nil, err
	} else if len(page.Sessions) == 0 && !cfg.NoDemo {
		id, err := runner.StartSession(ctx, web.StartRequest{Prompt: demoPrompt, Model: model.DemoModelName})
		if err != nil {
			release()
			return web.Deps{}, nil, fmt.Errorf("start the demo session: %w", err)
		}
		log.Info("empty database: started the scripted demo session", "session", id)
	}
	deps := web.Deps{
		Sessions:  storeSource{store},
		Commits:   feed,
		Importer:  storeImporter{store},
		Runner:    runner,
		Presenter: presenter,

		AllowedHosts: cfg.AllowedHosts,
	}
	return deps, release, nil
}

// presentationRegistry returns the registry whose presenters draw cards:
// every built-in tool, bash included, so that logged calls (imported dsh
// sessions too) get their proper cards even when bash is not enabled for
// the agent. Nothing executes through it.
func presentationRegistry(log *slog.Logger) (*core.Registry, error) {
	builtins, err := tools.Builtins(tools.Options{AllowBash: true})
	if err != nil {
		return nil, fmt.Errorf("presenters: %w", err)
	}
	reg := core.NewRegistry(log)
	if err := reg.Register(builtins...); err != nil {
		return nil, fmt.Errorf("presenters: %w", err)
	}
	return reg, nil
}

// commitFeed fans the store's commit notifications out to web: commits
// that append to OnCommit functions, commits that replaced a session's
// whole log (a rewritten watched file) to OnReplace functions.
type commitFeed struct {
	mu   sync.RWMutex
	subs []*feedSub
}

// feedSub is one registered function: fn for appends, or replace.
type feedSub struct {
	fn      func(sessionID string, events []core.Event)
	replace func(sessionID string)
}

var _ web.CommitFeed = (*commitFeed)(nil)

// OnCommit implements web.CommitFeed.
func (f *commitFeed) OnCommit(fn func(sessionID string, events []core.Event)) (remove func()) {
	return f.add(&feedSub{fn: fn})
}

// OnReplace implements web.CommitFeed.
func (f *commitFeed) OnReplace(fn func(sessionID string)) (remove func()) {
	return f.add(&feedSub{replace: fn})
}

func (f *commitFeed) add(s *feedSub) (remove func()) {
	f.mu.Lock()
	f.subs = append(slices.Clip(f.subs), s)
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.subs = slices.DeleteFunc(slices.Clone(f.subs), func(x *feedSub) bool { return x == s })
			f.mu.Unlock()
		})
	}
}

// publish is the store's Committed hook (called by its writer goroutine).
func (f *commitFeed) publish(c db.Commit) {
	f.mu.RLock()
	subs := f.subs
	f.mu.RUnlock()
	for _, s := range subs {
		switch {
		case c.Replaced && s.replace != nil:
			s.replace(c.SessionID)
		case !c.Replaced && s.fn != nil:
			s.fn(c.SessionID, c.Events)
		}
	}
}

// storeSource adapts the store to web.SessionSource.
type storeSource struct{ st *db.Store }

var _ web.SessionSource = storeSource{}

func summary(s db.SessionInfo) web.SessionSummary {
	return web.SessionSummary{
		ID: s.ID, Title: s.Title, Status: s.Status, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Calls: int(s.Calls), Errors: int(s.Errors), Events: s.EventCount(), ParentID: s.ParentID,
	}
}

// ListSessions implements web.SessionSource.
func (s storeSource) ListSessions(ctx context.Context, q web.ListQuery) ([]web.SessionSummary, error) {
	page, err := s.st.ListSessions(ctx, db.ListOptions{Query: q.Query, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]web.SessionSummary, len(page.Sessions))
	for i, info := range page.Sessions {
		out[i] = summary(info)
	}
	return out, nil
}

// Summary implements web.SessionSource.
func (s storeSource) Summary(ctx context.Context, id string) (web.SessionSummary, error) {
	info, err := s.st.Session(ctx, id)
	if err != nil {
		return web.SessionSummary{}, err
	}
	return summary(info), nil
}

// LoadSession implements web.SessionSource.
func (s storeSource) LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
	l, err := s.st.LoadSession(ctx, id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	return l.Info.Header, l.Events, nil
}

// EventsAfter implements web.SessionSource.
func (s storeSource) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	return s.st.EventsAfter(ctx, id, after)
}

// EventsUpTo implements web.SessionSource.
func (s storeSource) EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error) {
	info, err := s.st.Session(ctx, id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	events, err := s.st.EventsUpTo(ctx, id, upTo)
	return info.Header, events, err
}

// storeImporter adapts the store to web.Importer.
type storeImporter struct{ st *db.Store }

// Import implements web.Importer.
func (s storeImporter) Import(ctx context.Context, filename string, r io.Reader) ([]string, error) {
	results, err := s.st.Import(ctx, filename, r, -1)
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, errors.New("the file holds no session")
	}
	ids := make([]string, len(results))
	for i, res := range results {
		ids[i] = res.SessionID
	}
	return ids, nil
}
