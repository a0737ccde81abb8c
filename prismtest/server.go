package prismtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/backend"
	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/core/redact"
	"prism/db"
	"prism/views"
	"prism/web"
)

// Options configures NewServer.
type Options struct {
	// Tools is the registry every session's calls run through and whose
	// presenters draw the cards. Required.
	Tools *core.Registry
	// Script is what the scripted model answers in every session started
	// on the server (each session plays it from its first step); nil
	// answers every prompt with the scripted model's echo.
	Script *Script
	// Workspace is the sessions' working directory, which the file tools
	// are confined to ("" = a fresh t.TempDir()).
	Workspace string
	// Timeout bounds each wait — Wait, Stream.Next — before it fails the
	// test (0 = 30 s, and never past the test's deadline).
	Timeout time.Duration
	// RealClock stamps events with the wall clock. By default a session's
	// clock starts at T0 and advances Tick per event, as Card's does, so
	// pages show the same times on every run (and sessions started one
	// after another share one clock).
	RealClock bool
	// Deps, when set, adjusts the web server's dependencies before it is
	// built (its Tuning, AllowedHosts, …).
	Deps func(*web.Deps)
}

// Server is the whole prism stack for one test: the SQLite store on a file
// in t.TempDir(), the agent runner over Options.Tools on the scripted model
// playing Options.Script, and the web server — pages, SSE streams, the JSON
// API, share links, notes (labels on cards) — on an httptest server at URL. NewServer registers its shutdown with
// t.Cleanup: open streams end, running turns are cancelled and logged, the
// store closes.
type Server struct {
	// URL is the base URL of the web server, e.g. http://127.0.0.1:41234.
	URL string

	t       testing.TB
	ts      *httptest.Server
	store   *db.Store
	web     *web.Server
	turns   *turnCounter
	timeout time.Duration
}

// NewServer starts the prism stack for t (see Server).
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Tools == nil {
		t.Fatal("prismtest.NewServer: Options.Tools is nil: pass the registry of the tools under test")
	}
	log := testLogger(t, slog.LevelInfo)
	s := &Server{t: t, turns: newTurnCounter(), timeout: waitTimeout(t, opts.Timeout)}
	feed := &backend.Feed{}
	feed.OnCommit(s.turns.observe)
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: log, Committed: feed.Publish})
	if err != nil {
		t.Fatalf("prismtest.NewServer: open the store: %v", err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("prismtest: close the store: %v", err)
		}
	})
	s.store = store
	workspace := opts.Workspace
	if workspace == "" {
		workspace = t.TempDir()
	}
	cfg := agent.RunnerConfig{
		Store:         store,
		Tools:         opts.Tools,
		Models:        agenttest.Script(opts.Script.Steps()...),
		Workspace:     workspace,
		WorkspaceRoot: t.TempDir(),
		Logger:        log,
	}
	if !opts.RealClock {
		cfg.Now = (&stepClock{}).now
	}
	runner, err := agent.NewRunner(cfg)
	if err != nil {
		t.Fatalf("prismtest.NewServer: %v", err)
	}
	t.Cleanup(func() { _ = runner.Close() })
	redactor, err := redact.New()
	if err != nil {
		t.Fatalf("prismtest.NewServer: %v", err)
	}
	deps := web.Deps{
		Sessions:  backend.Source{Store: store},
		Presenter: opts.Tools,
		Commits:   feed,
		Runner:    &countingRunner{r: runner, turns: s.turns},
		Importer:  backend.Importer{Store: store},
		Shares:    store,
		Notes:     store,
		Redactor:  redactor,
		Logger:    log,
	}
	if opts.Deps != nil {
		opts.Deps(&deps)
	}
	s.web = web.New(deps)
	t.Cleanup(s.web.Close)
	s.ts = httptest.NewServer(s.web.Handler())
	t.Cleanup(func() {
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
	s.URL = s.ts.URL
	return s
}

// waitTimeout is how long a wait may take: d (default 30 s), ending a
// second before the test's deadline so the failure names what it waited
// for rather than the test binary's panic.
func waitTimeout(t testing.TB, d time.Duration) time.Duration {
	if d <= 0 {
		d = 30 * time.Second
	}
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := dt.Deadline(); ok {
			if left := time.Until(deadline) - time.Second; left > 0 && left < d {
				d = left
			}
		}
	}
	return d
}

// Client returns an HTTP client for the server (it does not follow
// redirects, so a test sees them).
func (s *Server) Client() *http.Client {
	c := *s.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// Start starts a session with prompt the way the inspector's "new session"
// form does (POST /sessions) and returns its id. The turn runs in the
// background: Wait for it, or follow it with Stream.
func (s *Server) Start(prompt string) string {
	s.t.Helper()
	res, body := s.post(views.StartURL(), url.Values{"prompt": {prompt}})
	loc := res.Header.Get("Location")
	id, ok := strings.CutPrefix(loc, views.SessionURL(""))
	if res.StatusCode != http.StatusSeeOther || !ok || id == "" {
		s.t.Fatalf("prismtest: start a session with %q: %s (Location %q): %s", prompt, res.Status, loc, clip(body))
	}
	id, err := url.PathUnescape(id)
	if err != nil {
		s.t.Fatalf("prismtest: start a session: bad Location %q: %v", loc, err)
	}
	return id
}

// Send sends a follow-up message to session id the way the page's message
// form does; it runs as the session's next turn.
func (s *Server) Send(id, text string) {
	s.t.Helper()
	res, body := s.post(views.MessagesURL(id), url.Values{"text": {text}})
	if res.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("prismtest: send %q to session %s: %s: %s", text, id, res.Status, clip(body))
	}
}

// Wait waits until every turn asked of session id (its prompt, each
// message sent) has ended — turn/end is committed to the store — and fails
// the test after the timeout, naming the session's last events.
func (s *Server) Wait(id string) {
	s.t.Helper()
	if err := s.turns.wait(id, s.timeout); err != nil {
		events, _ := s.store.EventsAfter(context.Background(), id, -1)
		if len(events) > 8 {
			events = events[len(events)-8:]
		}
		s.t.Fatalf("prismtest: session %s: %v; its last events: %s", id, err, eventTypes(events))
	}
}

// Page fetches session id's page (GET /sessions/{id}) and parses it,
// failing the test unless it answers 200.
func (s *Server) Page(id string) *goquery.Document {
	s.t.Helper()
	return s.Get(views.SessionURL(id))
}

// Get fetches path (e.g. "/", or a views URL builder's) as a browser does,
// failing the test unless it answers 200, and parses the page.
func (s *Server) Get(path string) *goquery.Document {
	s.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL+path, nil)
	if err != nil {
		s.t.Fatalf("prismtest: GET %s: %v", path, err)
	}
	req.Header.Set("Accept", "text/html")
	res, body := s.do(req)
	if res.StatusCode != http.StatusOK {
		s.t.Fatalf("prismtest: GET %s: %s: %s", path, res.Status, clip(body))
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		s.t.Fatalf("prismtest: GET %s: parse: %v", path, err)
	}
	return doc
}

// Events returns session id's durable log, as the store holds it.
func (s *Server) Events(id string) []core.Event {
	s.t.Helper()
	l, err := s.store.LoadSession(context.Background(), id)
	if err != nil {
		s.t.Fatalf("prismtest: load session %s: %v", id, err)
	}
	return l.Events
}

func (s *Server) post(path string, form url.Values) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatalf("prismtest: POST %s: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return s.do(req)
}

// do sends req and returns the response with its whole body.
func (s *Server) do(req *http.Request) (*http.Response, string) {
	s.t.Helper()
	res, err := s.Client().Do(req)
	if err != nil {
		s.t.Fatalf("prismtest: %s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("prismtest: %s %s: read the body: %v", req.Method, req.URL.Path, err)
	}
	return res, string(body)
}

// clip shortens a response body for a failure message.
func clip(s string) string {
	const n = 500
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// turnCounter counts, per session, the turns asked for (a start, each
// message) and the turns ended (turn/end committed), so Wait knows when a
// session has nothing left to do without polling.
type turnCounter struct {
	mu       sync.Mutex
	sessions map[string]*turns
}

type turns struct {
	asked, ended int
	changed      chan struct{} // closed and replaced on every change
}

func newTurnCounter() *turnCounter { return &turnCounter{sessions: map[string]*turns{}} }

func (c *turnCounter) get(id string) *turns {
	n := c.sessions[id]
	if n == nil {
		n = &turns{changed: make(chan struct{})}
		c.sessions[id] = n
	}
	return n
}

// update changes session id's counts under the lock and wakes its waiters.
func (c *turnCounter) update(id string, f func(*turns)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.get(id)
	f(n)
	close(n.changed)
	n.changed = make(chan struct{})
}

// observe is the store's commit hook: it counts committed turn/ends.
func (c *turnCounter) observe(id string, events []core.Event) {
	ended := 0
	for i := range events {
		if events[i].Type == core.EventTurnEnd {
			ended++
		}
	}
	if ended > 0 {
		c.update(id, func(n *turns) { n.ended += ended })
	}
}

// wait waits until session id's asked turns have all ended.
func (c *turnCounter) wait(id string, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := c.get(id)
		asked, ended, changed := n.asked, n.ended, n.changed
		c.mu.Unlock()
		if asked == 0 {
			return fmt.Errorf("no turn was asked of it through this server")
		}
		if ended >= asked {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("%d of its %d turns ended within %v", ended, asked, timeout)
		}
	}
}

// countingRunner is the runner the web server drives (web.Runner): the
// agent runner, counting the turns each session was asked for.
type countingRunner struct {
	r     *agent.Runner
	turns *turnCounter
}

var (
	_ web.Runner       = (*countingRunner)(nil)
	_ web.SessionOwner = (*countingRunner)(nil)
)

// StartSession implements web.Runner.
func (c *countingRunner) StartSession(ctx context.Context, req web.StartRequest) (string, error) {
	id, err := c.r.Start(ctx, agent.StartRequest{Prompt: req.Prompt, Model: req.Model, Workspace: req.Workspace})
	if err == nil {
		c.turns.update(id, func(n *turns) { n.asked++ })
	}
	return id, err
}

// SendMessage implements web.Runner.
func (c *countingRunner) SendMessage(ctx context.Context, id, text string) error {
	err := c.r.Send(ctx, id, text)
	if err == nil {
		c.turns.update(id, func(n *turns) { n.asked++ })
	}
	return err
}

// Cancel implements web.Runner: the messages still queued are dropped, so
// their turns will not come.
func (c *countingRunner) Cancel(_ context.Context, id string) error {
	st, err := c.r.Status(id)
	if err != nil {
		return err
	}
	if err := c.r.Cancel(id); err != nil {
		return err
	}
	c.turns.update(id, func(n *turns) { n.asked -= st.Queued })
	return nil
}

// Owns implements web.SessionOwner.
func (c *countingRunner) Owns(id string) bool {
	_, err := c.r.Status(id)
	return err == nil
}
