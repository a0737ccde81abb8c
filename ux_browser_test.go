package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"prism/core/redact"
	"prism/views"
	"prism/web"
)

// The browser tests of how the inspector reads to a person: accessibility
// (axe-core), the phone layout, the model view and the timeline, on the
// demo as `make run` starts it.

// axeVersion is the axe-core the accessibility test runs; `make axe` (a
// prerequisite of `make test`) installs it from npm, checksummed.
const axeVersion = "4.14.1"

// axeSource returns axe-core's script: PRISM_AXE_JS, else where `make axe`
// puts it.
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PRISM_AXE_JS")
	if path == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(dir, "prism", "axe-core-"+axeVersion, "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the accessibility test needs axe-core %s (run make axe, which make test runs): %v", axeVersion, err)
	}
	return string(b)
}

// demoStack is the server `make run` starts — the real backend on a fresh
// SQLite file with its scripted demo session — behind httptest servers for
// the owner's pages and for share links.
type demoStack struct {
	owner, shares *httptest.Server
	demoID        string
}

// startDemoStack starts the stack; flags are more serve flags.
func startDemoStack(t *testing.T, flags ...string) *demoStack {
	t.Helper()
	cfg, err := parseServeFlags(append([]string{"--db", filepath.Join(t.TempDir(), "prism.db")}, flags...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := quietLog()
	deps, release, err := openBackend(t.Context(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if deps.Redactor, err = redact.New(cfg.RedactRules...); err != nil {
		t.Fatal(err)
	}
	deps.Logger = log
	srv := web.New(deps)
	s := &demoStack{owner: httptest.NewServer(srv.Handler()), shares: httptest.NewServer(srv.ShareHandler())}
	t.Cleanup(func() { s.owner.Close(); s.shares.Close(); srv.Close(); release() })
	var list []struct{ ID string }
	s.getJSON(t, "/api/sessions", &list)
	if len(list) != 1 {
		t.Fatalf("want the one demo session, got %+v", list)
	}
	s.demoID = list[0].ID
	return s
}

func (s *demoStack) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	res, err := http.Get(s.owner.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s = %d", path, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// shareURL makes a share link of the demo and returns its page's URL on
// the share server.
func (s *demoStack) shareURL(t *testing.T) string {
	t.Helper()
	res, err := http.Post(s.owner.URL+"/api/sessions/"+s.demoID+"/shares", "application/json", strings.NewReader(`{"label":"a11y"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var link struct{ URL string }
	if err := json.NewDecoder(res.Body).Decode(&link); err != nil || res.StatusCode != 201 {
		t.Fatalf("create a share link: %d %v", res.StatusCode, err)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s.shares.URL + u.Path
}

// uxBrowser starts headless Chromium with a viewport of width×height
// (CSS px) and the given prefers-color-scheme.
func uxBrowser(t *testing.T, width, height int64, scheme string) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; make test installs it): %v", chromium, err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(width), int(height)))
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// openDemo navigates to the demo's session page and waits until the demo
// has finished (its status is no longer running).
func openDemo(t *testing.T, ctx context.Context, s *demoStack) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.owner.URL+"/sessions/"+s.demoID),
		chromedp.WaitReady(chromedp.CSS(`[data-testid="session-status"]:not([data-status="running"])`))); err != nil {
		t.Fatalf("the demo's page: %v", err)
	}
}

type axeNode struct {
	Target  []any  `json:"target"`
	Summary string `json:"failureSummary"`
}

type axeViolation struct {
	ID     string    `json:"id"`
	Impact string    `json:"impact"`
	Help   string    `json:"help"`
	Nodes  []axeNode `json:"nodes"`
}

// runAxe runs axe-core's default rules on the page ctx shows.
func runAxe(t *testing.T, ctx context.Context, src string) []axeViolation {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](src)); err != nil {
		t.Fatalf("load axe-core: %v", err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.version`))
	if err != nil || v != axeVersion {
		t.Fatalf("axe-core version %q (%v), want %s", v, err, axeVersion)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](
		`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe.run: %v", err)
	}
	return res
}

func describe(vs []axeViolation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s (%s): %s — %d nodes", v.ID, v.Impact, v.Help, len(v.Nodes))
		for i, n := range v.Nodes {
			if i == 4 {
				b.WriteString("\n    …")
				break
			}
			fmt.Fprintf(&b, "\n    %v: %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " "))
		}
	}
	return b.String()
}

// pricesFlags are serve flags with a price table for the demo's model, so
// pages show their costs (the list's cost column among them).
func pricesFlags(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(`{"demo": {"input": 1000, "output": 2000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--prices", path}
}

// TestAccessibility runs axe-core (default rules) on every page kind of
// the demo — list, session, projections, share, search (help, hits, a
// refused query) — in light and dark, with a price table (costs on the
// list and the session page): no violations.
func TestAccessibility(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	src := axeSource(t)
	s := startDemoStack(t, pricesFlags(t)...)
	share := s.shareURL(t)
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			ctx := uxBrowser(t, 1280, 900, scheme)
			openDemo(t, ctx, s)
			inspect, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('a.inspect').href`))
			if err != nil || inspect == "" {
				t.Fatalf("no projections link on the demo: %v", err)
			}
			pages := []struct{ name, url, ready string }{
				{"list", s.owner.URL + "/", `[data-testid="session-row"]`},
				{"session", s.owner.URL + "/sessions/" + s.demoID, `[data-testid="session-status"]:not([data-status="running"])`},
				{"projections", inspect, `[data-testid="call-page"]`},
				{"share", share, `[data-testid="tool-card"]`},
				{"search (help)", s.owner.URL + views.SearchURL("", "", ""), `[data-testid="search-help"]`},
				{"search (hits)", s.owner.URL + views.SearchURL("README tool:read", "", ""), `[data-testid="hit"] [data-testid="snippet"]`},
				{"search (refused query)", s.owner.URL + views.SearchURL(`"unclosed`, "", ""), `[data-testid="search-error"]`},
				{"compare", s.owner.URL + views.CompareURL(s.demoID, s.demoID), `[data-testid="compare-row"]`},
				{"compare (pick)", s.owner.URL + views.ComparePickURL(s.demoID), `[data-testid="compare-pick"]`},
			}
			for _, p := range pages {
				if err := chromedp.Do(ctx, chromedp.Navigate(p.url), chromedp.WaitReady(chromedp.CSS(p.ready))); err != nil {
					t.Fatalf("%s page: %v", p.name, err)
				}
				if vs := runAxe(t, ctx, src); len(vs) > 0 {
					t.Errorf("%s page, %s: %d axe violations:%s", p.name, scheme, len(vs), describe(vs))
				}
			}
		})
	}
}

// TestAccessibility_WhileWaiting runs axe-core on the pages of a session
// that runs and waits for a person's approval (the demo with --ask write):
// the list with its running and awaiting pills, the session page with a
// card that needs approval and its decision form, that call's projections,
// the share page and a search — light and dark, no violations.
func TestAccessibility_WhileWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	src := axeSource(t)
	s := startDemoStack(t, append(pricesFlags(t), "--ask", "write")...)
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			ctx := uxBrowser(t, 1280, 900, scheme)
			const waiting = `[data-testid="approval-form"]`
			if err := chromedp.Do(ctx, chromedp.Navigate(s.owner.URL+"/sessions/"+s.demoID), chromedp.WaitReady(chromedp.CSS(waiting))); err != nil {
				t.Fatalf("the demo never waited for an approval: %v", err)
			}
			call, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="approval-form"]').closest('article').querySelector('a.inspect').href`))
			if err != nil || call == "" {
				t.Fatalf("no projections link on the waiting card: %v", err)
			}
			share := s.shareURL(t)
			pages := []struct{ name, url, ready string }{
				{"list", s.owner.URL + "/", `[data-testid="session-row"] [data-testid="awaiting-badge"]`},
				{"session", s.owner.URL + "/sessions/" + s.demoID, waiting},
				{"call", call, `[data-testid="call-page"]`},
				{"share", share, `[data-testid="approval"]`},
				{"search", s.owner.URL + views.SearchURL("tool:write", "", ""), `[data-testid="search-help"], [data-testid="hit"]`},
			}
			for _, p := range pages {
				if err := chromedp.Do(ctx, chromedp.Navigate(p.url), chromedp.WaitReady(chromedp.CSS(p.ready))); err != nil {
					t.Fatalf("%s page: %v", p.name, err)
				}
				if vs := runAxe(t, ctx, src); len(vs) > 0 {
					t.Errorf("%s page, %s, while the session waits: %d axe violations:%s", p.name, scheme, len(vs), describe(vs))
				}
			}
			// The share panel's list of links has a header for every column.
			if err := chromedp.Do(ctx, chromedp.Navigate(s.owner.URL+"/sessions/"+s.demoID), chromedp.WaitReady(chromedp.CSS(`[data-testid="share-list"]`))); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelectorAll('details').forEach(d => d.open = true); true`)); err != nil {
				t.Fatal(err)
			}
			if vs := runAxe(t, ctx, src); len(vs) > 0 {
				t.Errorf("session page with its panels open, %s: %d axe violations:%s", scheme, len(vs), describe(vs))
			}
		})
	}
}

// TestPhoneLayout: at 390×844, light and dark, the list (with model,
// tokens and cost) and the demo's session page (whose error cards carry
// long identity pills) never scroll sideways, and every card's title keeps
// a non-zero width.
func TestPhoneLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	s := startDemoStack(t, pricesFlags(t)...)
	// A crash-repaired dsh log: its cards carry the longest error
	// identities (ToolOutcomeUnknownError · TOOL_OUTCOME_UNKNOWN).
	crashed, err := os.ReadFile("testdata/dsh/crashed/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(s.owner.URL+"/api/sessions/import", "application/x-ndjson", bytes.NewReader(crashed))
	if err != nil {
		t.Fatal(err)
	}
	var imported struct{ Sessions []struct{ ID string } }
	err = json.NewDecoder(res.Body).Decode(&imported)
	res.Body.Close()
	if err != nil || res.StatusCode/100 != 2 || len(imported.Sessions) != 1 {
		t.Fatalf("import the crashed session: %d %+v %v", res.StatusCode, imported, err)
	}
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			ctx := uxBrowser(t, 390, 844, scheme)
			openDemo(t, ctx, s)
			for _, p := range []struct{ name, url, ready string }{
				{"list", s.owner.URL + "/", `[data-testid="session-row"]`},
				{"crashed", s.owner.URL + "/sessions/" + imported.Sessions[0].ID, `[data-testid="error-identity"]`},
				{"session", s.owner.URL + "/sessions/" + s.demoID, `[data-testid="session-status"]:not([data-status="running"])`},
			} {
				if err := chromedp.Do(ctx, chromedp.Navigate(p.url), chromedp.WaitReady(chromedp.CSS(p.ready))); err != nil {
					t.Fatalf("%s page: %v", p.name, err)
				}
				// Everything expandable open (timelines, metadata, model
				// views, long outputs): still nothing wider than the screen.
				w, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`document.querySelectorAll('details').forEach(d => d.open = true); [document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
				if err != nil || len(w) != 2 || w[0] > w[1] {
					t.Errorf("%s page: [scrollWidth clientWidth] = %v (%v): the page scrolls sideways", p.name, w, err)
				}
				// The pills (state, error identity) stay inside their
				// card's head: wrapped, and a pill wider than the card cut
				// with an ellipsis, never clipped by the card's edge.
				clipped, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.card-head .badges')).filter(b => b.offsetParent && b.getBoundingClientRect().right > b.closest('.card-head').getBoundingClientRect().right + 0.5).map(b => b.closest('article').id + ': ' + b.textContent.trim())`))
				if err != nil || len(clipped) > 0 {
					t.Errorf("%s page: pills past their card's edge: %q (%v)", p.name, clipped, err)
				}
			}
			titles, err := chromedp.Run(ctx, chromedp.Evaluate[[]struct {
				Card  string  `json:"card"`
				Width float64 `json:"width"`
			}](`Array.from(document.querySelectorAll('.card-head .title')).filter(e => e.textContent.trim() !== '').map(e => ({card: e.closest('article').id, width: e.getBoundingClientRect().width}))`))
			if err != nil || len(titles) < 10 {
				t.Fatalf("card titles: %v (%v)", titles, err)
			}
			for _, ti := range titles {
				if ti.Width < 24 {
					t.Errorf("card %s: title %.1f px wide", ti.Card, ti.Width)
				}
			}
			errs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-state="error"] .card-head .title').length`))
			if err != nil || errs == 0 {
				t.Errorf("the demo shows no error card titles to check (%d, %v)", errs, err)
			}
		})
	}
}

// TestModelViewAndTimeline: on the demo's page, a card's "model view"
// toggle shows exactly the text of the tool result the transcript holds
// (read from the session's JSONL export) in place of the card's body; a
// timeline row jumps to its card; the list points at the demo.
func TestModelViewAndTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	s := startDemoStack(t)
	ctx := uxBrowser(t, 1280, 900, "light")
	openDemo(t, ctx, s)

	// The transcript's tool results, by call id, from the export.
	res, err := http.Get(s.owner.URL + views.ExportURL(s.demoID))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("export: %d %v", res.StatusCode, err)
	}
	contents := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		var e struct {
			Type string `json:"type"`
			Data struct {
				Message struct {
					Content []struct {
						Content []struct {
							Type, Text string
						} `json:"content"`
					} `json:"content"`
					Source struct {
						CallID string `json:"callId"`
					} `json:"source"`
				} `json:"message"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Type != "tool/result" || len(e.Data.Message.Content) != 1 {
			continue
		}
		var texts []string
		for _, b := range e.Data.Message.Content[0].Content {
			texts = append(texts, b.Text)
		}
		contents[e.Data.Message.Source.CallID] = strings.Join(texts, "\n")
	}
	if len(contents) < 10 {
		t.Fatalf("the export holds %d tool results", len(contents))
	}

	// The glob card: a short result, shown whole.
	const card = `article[data-card="search"]`
	callID, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+card+`').dataset.callId`))
	if err != nil {
		t.Fatal(err)
	}
	visible := func(sel string) bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const e = document.querySelector('`+sel+`'); return !!e && e.checkVisibility() })()`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !visible(card+` > .card-body`) || visible(card+` [data-testid="model-block"]`) {
		t.Fatalf("before the toggle: the card's body shows (%v), the model view does not (%v)", visible(card+` > .card-body`), visible(card+` [data-testid="model-block"]`))
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(card+` [data-testid="model-view"] > summary`))); err != nil {
		t.Fatal(err)
	}
	if visible(card+` > .card-body`) || !visible(card+` [data-testid="model-block"]`) {
		t.Fatal("after the toggle: the model view shows in place of the card's body")
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelector('`+card+`').querySelectorAll('[data-testid="model-block"] pre.lines')).map(p => p.textContent).join('\n')`))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(contents[callID], "\n"); shown != want || want == "" {
		t.Errorf("model view shows %q, the transcript holds %q", shown, want)
	}

	// The timeline: a row's link brings its card into view as the target.
	// The row is clicked where a reader sees it, mid-screen: the demo ran
	// while the page loaded, so the "N new below" pill floats at the
	// bottom of the window, over whatever the row would lie under there.
	const lastRow = `[data-testid="waterfall"] li:last-child > [data-testid="waterfall-row"]`
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="waterfall"] > summary`))); err != nil {
		t.Fatal(err)
	}
	hit, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const row = document.querySelector('`+lastRow+`'); row.scrollIntoView({block: 'center'}); const r = row.getBoundingClientRect(); const e = document.elementFromPoint(r.x + r.width/2, r.y + r.height/2); return row.contains(e) ? '' : (e ? e.outerHTML.slice(0, 120) : 'nothing') })()`))
	if err != nil || hit != "" {
		t.Fatalf("the timeline row is covered by %s (%v)", hit, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(lastRow))); err != nil {
		t.Fatal(err)
	}
	target, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const rows = document.querySelector('[data-testid="waterfall"]').querySelectorAll('[data-testid="waterfall-row"]'); const last = rows[rows.length-1]; const c = document.querySelector('article:target'); return c && c.id === last.dataset.cardId && c.getBoundingClientRect().top < window.innerHeight ? c.id : '' })()`))
	if err != nil || target == "" {
		t.Errorf("the timeline row did not bring its card into view (%v)", err)
	}

	// The list says what prism is and where the demo is.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.owner.URL+"/"), chromedp.WaitReady(chromedp.CSS(`[data-testid="demo-note"] a`))); err != nil {
		t.Fatal(err)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="demo-note"] a').getAttribute('href')`))
	if err != nil || href != "/sessions/"+s.demoID {
		t.Errorf("the demo note links %q (%v)", href, err)
	}
}

// TestSessionHeader: on the demo's page at 1280×800 the header holds the
// share, export and delete buttons (their forms closed) and the first card
// shows above the fold. Sharing from the page redirects after its POST (a
// reload neither posts again nor shows the link a second time), shows the
// URL once with a copy button that copies it; at 390 px the buttons stay
// on the screen and nothing scrolls sideways. Screenshots: PRISM_SHOTS.
func TestSessionHeader(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	s := startDemoStack(t)
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			ctx := uxBrowser(t, 1280, 800, scheme)
			openDemo(t, ctx, s)
			evalJS := func(expr string) string {
				t.Helper()
				v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
				if err != nil {
					t.Fatalf("%s: %v", expr, err)
				}
				return v
			}
			// The actions are buttons inside the header's box; the first
			// card's head shows above the transport bar.
			if got := evalJS(`(() => { const h = document.getElementById('session-head').getBoundingClientRect(); const out = [];
			  for (const id of ['share-button', 'export-button', 'delete-button', 'compare-with']) { const b = document.querySelector('[data-testid="' + id + '"]'); if (!b) { out.push(id + ' missing'); continue }
			    const r = b.getBoundingClientRect(); if (r.top < h.top || r.bottom > h.bottom || r.left < h.left || r.right > h.right) out.push(id + ' outside the header') }
			  if (document.querySelector('.sh-action[open]')) out.push('a form is open')
			  return out.join('; ') })()`); got != "" {
				t.Errorf("header: %s", got)
			}
			// A fresh load of the finished session, at the top.
			if err := chromedp.Do(ctx, chromedp.Navigate(s.owner.URL+"/sessions/"+s.demoID), chromedp.WaitReady(chromedp.CSS(`#transcript .card`))); err != nil {
				t.Fatal(err)
			}
			evalJS(`window.scrollTo(0, 0); ''`)
			if got := evalJS(`(() => { const c = document.querySelector('#transcript .card .card-head'); const tr = document.getElementById('transport');
			  const r = c.getBoundingClientRect(); const bottom = tr ? tr.getBoundingClientRect().top : innerHeight;
			  return r.top >= 0 && r.bottom <= bottom ? '' : 'the first card head spans ' + r.top + '–' + r.bottom + ', the fold at ' + bottom })()`); got != "" {
				t.Errorf("1280×800: %s", got)
			}
			shoot(t, ctx, "session-header-"+scheme+"-1280")

			// Share: the form opens over the page; creating a link
			// redirects to the page, which shows the URL once.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="share-button"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="share-create"]`)),
				chromedp.SendKeys(chromedp.CSS(`[data-testid="share-form"] input[name="label"]`), "for a colleague"),
				chromedp.Click(chromedp.CSS(`[data-testid="share-create"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="share-url"]`))); err != nil {
				t.Fatal(err)
			}
			if path := evalJS(`location.pathname`); path != "/sessions/"+s.demoID {
				t.Errorf("after creating a link the address bar holds %s", path)
			}
			shown := evalJS(`document.querySelector('[data-testid="share-url"]').value`)
			if !strings.Contains(shown, "/s/") {
				t.Fatalf("the URL shown: %q", shown)
			}
			shoot(t, ctx, "share-created-"+scheme+"-1280")
			evalJS(`navigator.clipboard.writeText = (t) => { window.__copied = t; return Promise.resolve() }; ''`)
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="share-copy"]`)),
				chromedp.WaitReady(chromedp.CSS(`[data-testid="share-copy"]`))); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.__copied !== undefined`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
				t.Fatalf("copy: %v", err)
			}
			if got := evalJS(`window.__copied`); got != shown {
				t.Errorf("copy copied %q, want %q", got, shown)
			}
			rows := evalJS(`String(document.querySelectorAll('[data-testid="share-row"]').length)`)
			if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`[data-testid="share-list"]`))); err != nil {
				t.Fatal(err)
			}
			if got := evalJS(`String(document.querySelectorAll('[data-testid="share-row"]').length)`); got != rows {
				t.Errorf("a reload changed the links from %s to %s", rows, got)
			}
			if got := evalJS(`String(document.querySelectorAll('[data-testid="share-url"]').length)`); got != "0" {
				t.Error("a reload shows the link's URL again")
			}

			// A phone: the actions in a row under the header, on screen.
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.owner.URL+"/sessions/"+s.demoID),
				chromedp.WaitReady(chromedp.CSS(`[data-testid="share-button"]`))); err != nil {
				t.Fatal(err)
			}
			if got := evalJS(`(() => { const out = []; for (const id of ['share-button', 'export-button', 'delete-button']) { const r = document.querySelector('[data-testid="' + id + '"]').getBoundingClientRect(); if (r.left < 0 || r.right > document.documentElement.clientWidth) out.push(id + ' off the screen') }
			  if (document.documentElement.scrollWidth > document.documentElement.clientWidth) out.push('the page scrolls sideways')
			  // The title has the header's width (no room kept for buttons that moved below it).
			  const h1 = document.querySelector('#session-head h1').getBoundingClientRect(), head = document.getElementById('session-head').getBoundingClientRect()
			  if (h1.width < head.width * 0.6) out.push('the title is squeezed to ' + Math.round(h1.width) + ' px of ' + Math.round(head.width))
			  return out.join('; ') })()`); got != "" {
				t.Errorf("390 px: %s", got)
			}
			shoot(t, ctx, "session-header-"+scheme+"-390")
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="share-button"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="share-create"]`))); err != nil {
				t.Fatal(err)
			}
			if got := evalJS(`document.documentElement.scrollWidth > document.documentElement.clientWidth ? 'the open share form scrolls sideways' : ''`); got != "" {
				t.Errorf("390 px: %s", got)
			}
			shoot(t, ctx, "share-open-"+scheme+"-390")
		})
	}
}

// shoot saves the viewport as PRISM_SHOTS/name.png when PRISM_SHOTS names
// a directory (screenshots to look at; nothing otherwise).
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("PRISM_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
