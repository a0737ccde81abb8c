// Package backend adapts a session store — any store.Store (SQLite's
// package db, PostgreSQL's package pgstore), through the interfaces below —
// and the agent runner to what the web server consumes (package web's
// SessionSource, CommitFeed, Importer, Runner, Approvals), and builds the
// registry whose presenters draw every built-in tool's cards. It also holds
// what a serving node runs beside the web server: retention (Retain) and,
// on a store shared by several nodes, the runner that forwards follow-ups,
// cancels and approval decisions to the node that runs a session
// (NewClusterRunner). prism's main wires it; web's tests use it to run the
// real store on a temporary file.
package backend

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"

	"prism/core"
	"prism/core/search"
	"prism/core/tools"
	"prism/sources/claudecode"
	"prism/sources/codex"
	"prism/store"
	"prism/views"
	"prism/web"
)

// Presenters returns the registry whose presenters draw cards: every
// built-in tool, bash included, so that logged calls (imported dsh sessions
// too) get their proper cards even when bash is not enabled for the agent,
// the presenters of Claude Code's and Codex's tools (their sessions' cards),
// and the extra tools given (the MCP servers'). Nothing executes through it.
func Presenters(log *slog.Logger, extra ...*core.Tool) (*core.Registry, error) {
	builtins, err := tools.Builtins(tools.Options{AllowBash: true})
	if err != nil {
		return nil, fmt.Errorf("presenters: %w", err)
	}
	cc, err := claudecode.Presenters()
	if err != nil {
		return nil, fmt.Errorf("presenters: %w", err)
	}
	cx, err := codex.Tools()
	if err != nil {
		return nil, fmt.Errorf("presenters: %w", err)
	}
	reg := core.NewRegistry(log)
	// The subagent tool without a runner: its cards only (a running one is
	// in the runner's registry).
	if err := reg.Register(slices.Concat(builtins, cc, cx, []*core.Tool{tools.NewSubagent(nil)}, extra)...); err != nil {
		return nil, fmt.Errorf("presenters: %w", err)
	}
	return reg, nil
}

// Feed fans the store's commit notifications out to web: commits that
// append go to OnCommit functions, commits that replaced a session's whole
// log (a rewritten watched file, an import --replace) or deleted the
// session to OnReplace functions (a deleted session's pages then find it
// gone). Pass its Publish as the store's Options.Committed. The zero Feed
// is ready to use.
type Feed struct {
	mu   sync.RWMutex
	subs []*feedSub
}

// feedSub is one registered function: fn for appends (local: only this
// node's own), replace, or notes.
type feedSub struct {
	fn      func(sessionID string, events []core.Event)
	local   bool
	replace func(sessionID string)
	notes   func(sessionID string)
}

var (
	_ web.CommitFeed = (*Feed)(nil)
	_ web.NoteFeed   = (*Feed)(nil)
)

// OnNotes implements web.NoteFeed: fn gets the id of every session whose
// notes a commit wrote (store.Commit.Notes).
func (f *Feed) OnNotes(fn func(sessionID string)) (remove func()) {
	return f.add(&feedSub{notes: fn})
}

// OnCommit implements web.CommitFeed.
func (f *Feed) OnCommit(fn func(sessionID string, events []core.Event)) (remove func()) {
	return f.add(&feedSub{fn: fn})
}

// OnLocalCommit is OnCommit for this node's own commits only
// (store.Commit.Local): on several PostgreSQL nodes, each commit reaches the
// fn of exactly one node, the one that made it.
func (f *Feed) OnLocalCommit(fn func(sessionID string, events []core.Event)) (remove func()) {
	return f.add(&feedSub{fn: fn, local: true})
}

// OnReplace implements web.CommitFeed.
func (f *Feed) OnReplace(fn func(sessionID string)) (remove func()) {
	return f.add(&feedSub{replace: fn})
}

func (f *Feed) add(s *feedSub) (remove func()) {
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

// Publish is the store's Committed hook (called by its writer goroutine).
func (f *Feed) Publish(c store.Commit) {
	f.mu.RLock()
	subs := f.subs
	f.mu.RUnlock()
	notesOnly := c.Notes && len(c.Events) == 0 && !c.Created && !c.Replaced && !c.Deleted
	for _, s := range subs {
		switch {
		case s.notes != nil:
			if c.Notes {
				s.notes(c.SessionID)
			}
		case notesOnly:
		case (c.Replaced || c.Deleted) && s.replace != nil:
			s.replace(c.SessionID)
		case !c.Replaced && !c.Deleted && s.fn != nil && (c.Local || !s.local):
			s.fn(c.SessionID, c.Events)
		}
	}
}

// Reader is what Source reads: either engine's store.
type Reader interface {
	ListSessions(ctx context.Context, o store.ListOptions) (store.SessionPage, error)
	Session(ctx context.Context, id string) (store.SessionInfo, error)
	LoadSession(ctx context.Context, id string) (*store.SessionLog, error)
	EventsAfter(ctx context.Context, id string, afterSeq int64) ([]core.Event, error)
	EventsUpTo(ctx context.Context, id string, seq int64) ([]core.Event, error)
	EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error)
	CallEvents(ctx context.Context, id, callID string, withTypes ...string) ([]core.Event, error)
}

// Source adapts a store to web.SessionSource.
type Source struct{ Store Reader }

var _ web.SessionSource = Source{}

func summary(s store.SessionInfo) web.SessionSummary {
	return web.SessionSummary{ID: s.ID, ParentID: s.ParentID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Summary: s.Summary}
}

// ListSessions implements web.SessionSource.
func (s Source) ListSessions(ctx context.Context, q web.ListQuery) ([]web.SessionSummary, error) {
	page, err := s.Store.ListSessions(ctx, store.ListOptions{Query: q.Query, Status: q.Status, HasErrors: q.HasErrors, Annotated: q.Annotated, Sort: q.Sort, Limit: q.Limit})
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
func (s Source) Summary(ctx context.Context, id string) (web.SessionSummary, error) {
	info, err := s.Store.Session(ctx, id)
	if err != nil {
		return web.SessionSummary{}, err
	}
	return summary(info), nil
}

// LoadSession implements web.SessionSource.
func (s Source) LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
	l, err := s.Store.LoadSession(ctx, id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	return l.Info.Header, l.Events, nil
}

// EventsAfter implements web.SessionSource.
func (s Source) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	return s.Store.EventsAfter(ctx, id, after)
}

// EventsAfterEach implements web.SessionSource.
func (s Source) EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error) {
	return s.Store.EventsAfterEach(ctx, after)
}

// CallEvents implements web.SessionSource.
func (s Source) CallEvents(ctx context.Context, id, callID string) (core.SessionHeader, []core.Event, error) {
	info, err := s.Store.Session(ctx, id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	events, err := s.Store.CallEvents(ctx, id, callID, views.CallContextTypes()...)
	return info.Header, events, err
}

// EventsUpTo implements web.SessionSource.
func (s Source) EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error) {
	info, err := s.Store.Session(ctx, id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	events, err := s.Store.EventsUpTo(ctx, id, upTo)
	return info.Header, events, err
}

// Loader is what Importer writes through: either engine's store.
type Loader interface {
	ImportWith(ctx context.Context, name string, r io.Reader, size int64, o store.ImportOptions) ([]store.ImportResult, error)
}

// Importer adapts a store to web.Importer.
type Importer struct{ Store Loader }

var _ web.Importer = Importer{}

// Import implements web.Importer.
func (s Importer) Import(ctx context.Context, filename string, r io.Reader, o web.ImportOptions) ([]web.ImportedSession, error) {
	size := int64(-1)
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok { // a spooled upload: a zip is read in place
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
	}
	results, err := s.Store.ImportWith(ctx, filename, r, size, store.ImportOptions{As: o.As, Replace: o.Replace})
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, core.Errorf(core.CodeInvalid, "%s: the file holds no session", filename)
	}
	out := make([]web.ImportedSession, len(results))
	for i, res := range results {
		out[i] = web.ImportedSession{ID: res.SessionID, Status: res.Outcome, Events: res.Events, Revoked: res.Revoked, Original: res.Original,
			Torn: res.Torn, Repaired: res.Repaired, Notes: res.Notes()}
	}
	return out, nil
}

// Finder is what Search reads: a store with a full-text index (both
// engines: SQLite FTS4, PostgreSQL tsvector).
type Finder interface {
	Search(ctx context.Context, q *search.Query, o store.SearchOptions) (store.SearchPage, error)
}

// Deleter adapts the store to web.Deleter.
type Deleter struct{ Store Remover }

// Remover is what Deleter deletes through: either engine's store.
type Remover interface {
	DeleteSession(ctx context.Context, id string) (store.Deleted, error)
}

var _ web.Deleter = Deleter{}

// DeleteSession implements web.Deleter.
func (s Deleter) DeleteSession(ctx context.Context, id string) (web.DeletedSession, error) {
	d, err := s.Store.DeleteSession(ctx, id)
	if err != nil {
		return web.DeletedSession{}, err
	}
	return web.DeletedSession{ID: d.SessionID, Subagents: d.Subagents, Events: d.Events, Shares: d.Shares}, nil
}

// Search adapts the store's full-text search to web.Searcher.
type Search struct{ Store Finder }

var _ web.Searcher = Search{}

// Search implements web.Searcher.
func (s Search) Search(ctx context.Context, q *search.Query, o web.SearchOptions) (web.SearchResults, error) {
	page, err := s.Store.Search(ctx, q, store.SearchOptions{Order: o.Order, Limit: o.Limit, Cursor: o.Cursor})
	if err != nil {
		return web.SearchResults{}, err
	}
	out := web.SearchResults{Hits: make([]views.SearchHitInput, len(page.Hits)), NextCursor: page.NextCursor, RankedAmong: page.RankedAmong}
	for i, h := range page.Hits {
		out.Hits[i] = views.SearchHitInput{SessionID: h.SessionID, SessionTitle: h.SessionTitle, SessionStatus: h.SessionStatus,
			Kind: h.Kind, Seq: h.Seq, CallID: h.CallID, Card: h.Card, Tool: h.Tool, Failed: h.Failed, ErrorCode: h.ErrorCode,
			Time: h.Time, Snippet: h.Snippet}
	}
	return out, nil
}
