package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"prism/backend"
	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/db"
	"prism/web"
)

const chromium = "/usr/bin/chromium"

// gateArgs names the gate a call waits on.
type gateArgs struct {
	Name string `json:"name"`
}

// gateTool blocks each call until the test releases it, so a card stays
// pending for as long as the test needs.
func gateTool(release <-chan struct{}) *core.Tool {
	return core.MustDefine(core.Definition[gateArgs, string]{
		Name:       "gate",
		Parameters: `{"name":{"type":"string","required":true}}`,
		Output: core.Output[gateArgs, string]{Schema: `{"type":"string"}`,
			Render: func(_ gateArgs, v string) (core.Content, error) { return core.Text(v), nil }},
		Execute: func(ctx context.Context, a gateArgs, _ *core.Run) (string, error) {
			select {
			case <-release:
				return "opened " + a.Name, nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		},
		PresentCall: func(a gateArgs) core.CallView {
			return &core.GenericCallView{Title: "Wait at gate " + a.Name, Kind: core.KindOther}
		},
	})
}

type gateModels struct{}

func (gateModels) New(string) (model.Model, error) {
	return model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: []model.Step{
		{Text: "Waiting at the gate.", Calls: []model.ScriptCall{{ID: "gate-1", Name: "gate", Arguments: `{"name":"north"}`}}},
		{Text: "The gate **opened**."},
	}}}), nil
}

func (gateModels) Default() string { return "gate-script" }

// TestEndToEndBrowser runs the real stack — SQLite store, agent runner on
// a scripted model, the pipeline, web — and drives headless Chromium: the
// session's page shows the running call's card pending, and when the tool
// finishes, the same element becomes ok over SSE with no reload.
func TestEndToEndBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	g := startGateSession(t, nil)
	ts := httptest.NewServer(g.srv.Handler())
	t.Cleanup(ts.Close)
	id, release := g.id, g.release

	bctx := browser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(ts.URL+"/sessions/"+id),
		chromedp.WaitReady(chromedp.CSS(`[data-call-id="gate-1"][data-state="pending"]`))); err != nil {
		t.Fatalf("the pending card: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`window.__fetch.includes('started')`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the page's stream never started: %v", err)
	}
	release()
	if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`[data-call-id="gate-1"][data-state="ok"]`))); err != nil {
		t.Fatalf("the card never completed: %v", err)
	}
	states, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.__states`))
	if err != nil {
		t.Fatal(err)
	}
	// The card appeared pending and the same element was morphed to ok:
	// never replaced, never shown in any other state.
	if len(states) < 2 || states[0] != "added:pending" || states[len(states)-1] != "attr:ok" {
		t.Errorf("card states seen by the page = %v, want added:pending … attr:ok", states)
	}
	for _, s := range states[1:] {
		if s != "attr:pending" && s != "attr:ok" {
			t.Errorf("card states seen by the page = %v: the element was replaced or took another state", states)
			break
		}
	}
	if nav, err := chromedp.Run(bctx, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`)); err != nil || nav != 1 {
		t.Errorf("navigations = %d (%v), want 1: no reload", nav, err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`[data-testid="assistant-message"] strong`))); err != nil {
		t.Errorf("the final assistant text never streamed in: %v", err)
	}
	if shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
		dir := filepath.Join("artifacts", "browser")
		if os.MkdirAll(dir, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(dir, "end-to-end.png"), shot, 0o644)
		}
	}
}

// gateSession is the real stack — SQLite store, agent runner on a scripted
// model, the pipeline, web — running one session whose gate call is
// pending (committed) until release is called.
type gateSession struct {
	store   *db.Store
	srv     *web.Server
	id      string
	release func()
}

// startGateSession starts the stack and the session and waits for its
// gate call to be committed; deps may adjust the server's Deps.
func startGateSession(t *testing.T, deps func(*web.Deps)) *gateSession {
	t.Helper()
	log := quietLog()
	store, feed := openTestStore(t, log)
	gate := make(chan struct{})
	reg, err := backend.Presenters(log)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(gateTool(gate))
	runner, err := agent.NewRunner(agent.RunnerConfig{Store: store, Tools: reg, Models: gateModels{},
		WorkspaceRoot: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	d := web.Deps{Sessions: backend.Source{Store: store}, Commits: feed, Runner: backend.AgentRunner{Runner: runner}, Presenter: reg, Logger: log}
	if deps != nil {
		deps(&d)
	}
	srv := web.New(d)
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() {
		release()
		srv.Close()
		runner.Close()
	})
	called := make(chan string, 1)
	remove := feed.OnCommit(func(id string, events []core.Event) {
		for _, e := range events {
			if e.Type == core.EventToolCall {
				select {
				case called <- id:
				default:
				}
			}
		}
	})
	defer remove()
	id, err := runner.Start(t.Context(), agent.StartRequest{Prompt: "Open the north gate."})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-called:
		if got != id {
			t.Fatalf("tool/call committed for %s, want %s", got, id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the gate call was never committed")
	}
	return &gateSession{store: store, srv: srv, id: id, release: release}
}

// headless starts Debian's Chromium, headless at 1280×900 with a fresh
// profile, for one test: stopped when the test ends (or after 3 minutes).
func headless(t *testing.T) context.Context {
	t.Helper()
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(actx)
	// A bound on a hung browser, not a measure: two Chromiums under -race
	// on a loaded 2-core machine took over 60 s for the approval test
	// (on main too).
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	return ctx
}

// browser starts headless Chromium with a probe that records the gate
// card's states (the element present at load, then its attribute changes)
// and Datastar's fetch events; a different element showing the card later
// is recorded as a replacement.
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx := headless(t)
	const probe = `
window.__states = []; window.__fetch = [];
const sel = '[data-call-id="gate-1"]';
new MutationObserver(ms => { for (const m of ms) {
  if (m.type === 'attributes' && m.target.matches && m.target.matches(sel)) window.__states.push('attr:' + m.target.getAttribute('data-state'));
  for (const n of m.addedNodes) if (n.nodeType === 1) {
    const el = n.matches(sel) ? n : n.querySelector && n.querySelector(sel);
    if (el && el !== window.__card) { window.__states.push((window.__card ? 'replaced:' : 'added:') + el.getAttribute('data-state')); window.__card = el; }
  }
}}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-state']});
document.addEventListener('datastar-fetch', e => window.__fetch.push(e.detail.type));`
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probe}); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// openTestStore opens the SQLite store on a fresh file, its commits fed to
// the returned feed; it is closed when the test ends.
func openTestStore(t *testing.T, log *slog.Logger) (*db.Store, *backend.Feed) {
	t.Helper()
	feed := &backend.Feed{}
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: log, Committed: feed.Publish})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, feed
}

// quietLog discards logs below warnings.
func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TestWebRunnerOwnsOnlyItsSessions: the runner adapter owns the sessions
// the runner started, not others in the store (imported, watched, an
// earlier run's), and the session page shows the follow-up and cancel
// controls accordingly.
func TestWebRunnerOwnsOnlyItsSessions(t *testing.T) {
	ctx := t.Context()
	log := quietLog()
	store, feed := openTestStore(t, log)
	release := make(chan struct{})
	reg, err := backend.Presenters(log)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(gateTool(release))
	runner, err := agent.NewRunner(agent.RunnerConfig{Store: store, Tools: reg, Models: gateModels{},
		WorkspaceRoot: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Deps{Sessions: backend.Source{Store: store}, Commits: feed, Runner: backend.AgentRunner{Runner: runner}, Presenter: reg, Logger: log})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		close(release)
		ts.Close()
		srv.Close()
		runner.Close()
	})
	id, err := runner.Start(ctx, agent.StartRequest{Prompt: "Open the north gate."})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateSession(ctx, core.SessionHeader{ID: "imported", CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	w := backend.AgentRunner{Runner: runner}
	if !w.Owns(id) || w.Owns("imported") || w.Owns("nope") {
		t.Errorf("Owns(started) = %v, Owns(imported) = %v, Owns(unknown) = %v; want true, false, false", w.Owns(id), w.Owns("imported"), w.Owns("nope"))
	}
	for sid, want := range map[string]bool{id: true, "imported": false} {
		res, err := ts.Client().Get(ts.URL + "/sessions/" + sid)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := strings.Contains(string(body), `data-testid="message-form"`); res.StatusCode != 200 || got != want {
			t.Errorf("GET /sessions/%s = %d, message form shown %v, want %v", sid, res.StatusCode, got, want)
		}
	}
}
