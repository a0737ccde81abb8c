package web_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/agent/agenttest"
	"prism/core/sessionlog"
	"prism/db"
	"prism/web"
)

const t0 = 1767225600000 // 2026-01-01T00:00:00Z

// env is a web server over the real stack: the SQLite store on a fresh
// file (package backend's adapters) and the production presenters.
type env struct {
	ts    *httptest.Server
	store *db.Store
	feed  *backend.Feed
	srv   *web.Server
	// url and hc override ts for a server served by Serve.
	url string
	hc  *http.Client

	watchDir string
	watcher  *db.Watcher
}

func (e *env) base() string {
	if e.url != "" {
		return e.url
	}
	return e.ts.URL
}

func (e *env) client() *http.Client {
	if e.hc != nil {
		return e.hc
	}
	return e.ts.Client()
}

// testLogger discards logs unless the test runs verbosely.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// openStore opens the store on a fresh file in t's temporary directory,
// its commits fed to the returned feed; it closes when the test ends.
func openStore(t testing.TB) (*db.Store, *backend.Feed) {
	t.Helper()
	feed := &backend.Feed{}
	st, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: testLogger(), Committed: feed.Publish})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, feed
}

// demoEvents returns the log of prism's scripted demo (agenttest.DemoLog):
// every card kind and failure class, from the real agent loop and tools.
func demoEvents(t testing.TB) []core.Event {
	t.Helper()
	_, events := agenttest.DemoLog(t, t0)
	return events
}

// presenters returns the production presenters (backend.Presenters).
func presenters(t testing.TB) *core.Registry {
	t.Helper()
	reg, err := backend.Presenters(testLogger())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// newEnv starts a server over a fresh store; deps may adjust its Deps.
func newEnv(t testing.TB, deps func(*web.Deps)) *env {
	t.Helper()
	st, feed := openStore(t)
	d := web.Deps{Sessions: backend.Source{Store: st}, Commits: feed, Importer: backend.Importer{Store: st}, Search: backend.Search{Store: st},
		Presenter: presenters(t), Logger: testLogger()}
	if deps != nil {
		deps(&d)
	}
	srv := web.New(d)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	dir := t.TempDir()
	return &env{ts: ts, store: st, feed: feed, srv: srv, watchDir: dir, watcher: st.NewWatcher(dir, db.WatchOptions{})}
}

// watched writes h and events as a dsh session file in the env's watched
// directory (a new file each time) and has the store's watcher sync it: the
// first call creates a watched session, a later one whose log diverges
// from the stored one replaces it — as when dsh rewrites a session file.
func (e *env) watched(t testing.TB, h core.SessionHeader, events []core.Event) {
	t.Helper()
	var buf bytes.Buffer
	if err := sessionlog.WriteJSONL(&buf, h, events); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.watchDir, "project", h.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "session.jsonl.tmp")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "session.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := e.watcher.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// session creates a session and appends events (seqs from 0).
func (e *env) session(t testing.TB, id string, events []core.Event) {
	t.Helper()
	ctx := context.Background()
	if err := e.store.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: t0, Cwd: "/work"}); err != nil {
		t.Fatal(err)
	}
	if len(events) > 0 {
		if err := e.store.AppendEvents(ctx, id, events); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) append(t testing.TB, id string, events ...core.Event) {
	t.Helper()
	if err := e.store.AppendEvents(context.Background(), id, events); err != nil {
		t.Fatal(err)
	}
}

func (e *env) get(t testing.TB, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	return e.do(t, http.MethodGet, path, nil, append([]string{"Accept", "text/html"}, hdr...)...)
}

// post sends a POST with a body of contentType; hdr are header pairs.
func (e *env) post(t testing.TB, path, contentType, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	return e.do(t, http.MethodPost, path, strings.NewReader(body), append([]string{"Content-Type", contentType}, hdr...)...)
}

// do sends a request with header pairs hdr (later pairs win) and returns
// the response with its whole body.
func (e *env) do(t testing.TB, method, path string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.base()+path, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(res.Body).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return res, b.String()
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Type, ID string
	Data     []string
}

// Elements returns the joined "elements" data lines.
func (ev sseEvent) Elements() string {
	var parts []string
	for _, d := range ev.Data {
		if s, ok := strings.CutPrefix(d, "elements "); ok {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

func (ev sseEvent) field(name string) string {
	for _, d := range ev.Data {
		if s, ok := strings.CutPrefix(d, name+" "); ok {
			return s
		}
	}
	return ""
}

// sseClient reads one SSE stream.
type sseClient struct {
	events chan sseEvent
	cancel context.CancelFunc
	res    *http.Response
}

func (e *env) stream(t testing.TB, path string, hdr ...string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base()+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &sseClient{events: make(chan sseEvent, 1024), cancel: cancel, res: res}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" || ev.ID != "" { // an id-only event moves the cursor
					c.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.Data = append(ev.Data, line[6:])
			}
		}
	}()
	return c
}

// next returns the next event, failing after 5 s.
func (c *sseClient) next(t testing.TB) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no SSE event within 5s")
	}
	return sseEvent{}
}

// until reads events until one satisfies ok, returning all read.
func (c *sseClient) until(t testing.TB, ok func(sseEvent) bool) []sseEvent {
	t.Helper()
	var got []sseEvent
	for {
		ev := c.next(t)
		got = append(got, ev)
		if ok(ev) {
			return got
		}
	}
}

// cards extracts every <article id=…>…</article> from html, keyed by id.
func cards(html string) map[string]string {
	out := map[string]string{}
	for {
		i := strings.Index(html, `<article id="`)
		if i < 0 {
			return out
		}
		html = html[i:]
		j := strings.Index(html, "</article>")
		if j < 0 {
			return out
		}
		card := html[:j+len("</article>")]
		id := card[len(`<article id="`):]
		id = id[:strings.IndexByte(id, '"')]
		out[id] = card
		html = html[j:]
	}
}

func seqOf(ev sseEvent) int64 {
	var n int64 = -2
	if ev.ID != "" {
		n = 0
		for _, c := range ev.ID {
			n = n*10 + int64(c-'0')
		}
	}
	return n
}
