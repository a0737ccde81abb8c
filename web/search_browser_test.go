package web_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/core/coretest"
)

// searchBrowser starts headless Chromium for a test; console errors and
// exceptions are collected into *problems.
func searchBrowser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	var mu sync.Mutex
	var problems []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleException || m.Type == "error") && !strings.Contains(m.Text, "favicon") {
				mu.Lock()
				problems = append(problems, string(m.Type)+": "+m.Text)
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// TestBrowser_FilterBar: the session page's filter bar hides cards without
// a reload, counts them per state, tool and error code, steps between
// failed cards, expands and collapses everything, and filters cards that
// arrive live.
func TestBrowser_FilterBar(t *testing.T) {
	ctx, problems := searchBrowser(t)
	e := newEnv(t, nil)
	e.session(t, "demo", demoEvents(t))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.ts.URL+"/sessions/demo"),
		chromedp.WaitReady(chromedp.CSS(`[data-testid="tool-counts"] .chip`)),
	); err != nil {
		t.Fatal(err)
	}
	type state struct {
		Visible, Cards, Hidden int
		States                 map[string]string
		Tools, Codes           []string
		Summary                string
		Reload                 bool
	}
	read := func() state {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[state](`(() => {
			const cards = [...document.querySelectorAll('[data-testid="tool-card"]')];
			const vis = cards.filter(c => c.offsetParent !== null);
			const states = {}; for (const n of document.querySelectorAll('[data-count-state]')) states[n.dataset.countState] = n.textContent;
			return {Visible: vis.length, Cards: cards.length, Hidden: document.querySelectorAll('.transcript .f-out').length, States: states,
				Tools: [...document.querySelectorAll('[data-chips=tool] .chip')].map(c => c.textContent),
				Codes: [...document.querySelectorAll('[data-chips=code] .chip')].map(c => c.textContent),
				Summary: document.querySelector('[data-testid="filter-summary"]').textContent, Reload: window.__loaded !== true};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__loaded = true`)); err != nil {
		t.Fatal(err)
	}
	// Counts: what the demo's cards hold, read from their attributes.
	want, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`(() => { const m = {};
		for (const c of document.querySelectorAll('[data-testid="tool-card"]')) {
			m['state:' + c.dataset.filterState] = (m['state:' + c.dataset.filterState] || 0) + 1;
			m['tool:' + c.dataset.tool] = (m['tool:' + c.dataset.tool] || 0) + 1;
			if (c.dataset.errorCode) m['code:' + c.dataset.errorCode] = (m['code:' + c.dataset.errorCode] || 0) + 1;
		} return m; })()`))
	if err != nil {
		t.Fatal(err)
	}
	s := read()
	if s.Visible != s.Cards || s.Cards < 10 {
		t.Fatalf("unfiltered: %d of %d cards visible", s.Visible, s.Cards)
	}
	for k, n := range want {
		kind, name, _ := strings.Cut(k, ":")
		switch kind {
		case "state":
			if s.States[name] != itoa(int64(n)) {
				t.Errorf("state %s counts %q, want %d", name, s.States[name], n)
			}
		case "tool", "code":
			list := s.Tools
			if kind == "code" {
				list = s.Codes
			}
			if !containsString(list, name+" "+itoa(int64(n))) {
				t.Errorf("%s chips %q lack %q", kind, list, name+" "+itoa(int64(n)))
			}
		}
	}
	// State: only the failed cards.
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="filter-state-error"]`)); err != nil {
		t.Fatal(err)
	}
	s = read()
	if s.Visible != want["state:error"] || s.Reload || !strings.Contains(s.Summary, "showing "+itoa(int64(want["state:error"]))+" of") {
		t.Errorf("state error: %d visible (summary %q), want %d, no reload", s.Visible, s.Summary, want["state:error"])
	}
	// Next error: the first failed card, focused and in view.
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="next-error"]`)); err != nil {
		t.Fatal(err)
	}
	focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.dataset.filterState || ''`))
	if focused != "error" && focused != "interrupted" {
		t.Errorf("next error focused %q", focused)
	}
	// A tool chip narrows further; clearing restores everything.
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="filter-clear"]`), chromedp.Click(`[data-chips=tool] .chip[data-value="read"]`)); err != nil {
		t.Fatal(err)
	}
	if s = read(); s.Visible != want["tool:read"] {
		t.Errorf("tool read: %d visible, want %d", s.Visible, want["tool:read"])
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="filter-clear"]`)); err != nil {
		t.Fatal(err)
	}
	// Text: the cards (and messages) that hold it.
	if err := chromedp.Do(ctx, chromedp.SendKeys(`[data-testid="filter-text"]`, "CHANGELOG")); err != nil {
		t.Fatal(err)
	}
	wantText, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="tool-card"]')].filter(c => c.textContent.toLowerCase().includes('changelog')).length`))
	if s = read(); s.Visible != wantText || wantText == 0 || wantText == s.Cards {
		t.Errorf("text CHANGELOG: %d visible, want %d of %d", s.Visible, wantText, s.Cards)
	}
	// Expand and collapse all.
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="filter-clear"]`), chromedp.Click(`[data-testid="expand-all"]`)); err != nil {
		t.Fatal(err)
	}
	closed, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.transcript details:not([open]):not(.model-view)').length + document.querySelectorAll('.transcript .expand-toggle:not(:checked)').length`))
	if closed != 0 {
		t.Errorf("expand all left %d closed", closed)
	}
	// The model view replaces a card's body while open: expanding all
	// leaves it shut, so every body stays in sight.
	hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.transcript .model-view[open]').length + [...document.querySelectorAll('.transcript .card-body')].filter(b => getComputedStyle(b).display === 'none').length`))
	if hidden != 0 {
		t.Errorf("expand all opened model views or hid %d card bodies", hidden)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="collapse-all"]`)); err != nil {
		t.Fatal(err)
	}
	open, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.transcript details[open]').length`))
	if open != 0 {
		t.Errorf("collapse all left %d open", open)
	}
	// Live: while only errors show, an ok card arrives hidden and counted;
	// a failed one arrives shown.
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="filter-state-error"]`)); err != nil {
		t.Fatal(err)
	}
	b := coretest.NewBuilder(t0 + 1_000_000)
	b.TurnStart().StepStart().Call("live-ok", "note", `{"title":"fine"}`).Result("live-ok", "fine", false, nil, nil)
	b.Call("live-bad", "read", `{"file_path":"nope"}`).Result("live-bad", "Error: nope", true, nil, nil)
	e.append(t, "demo", shifted(b.Events, int64(len(demoEvents(t))))...)
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`#call-live-bad`))); err != nil {
		t.Fatal(err)
	}
	// The filter runs once per animation frame after cards arrive: wait
	// until the ok card is hidden (a filter that never runs times out), then
	// the failed one must be shown.
	live, err := chromedp.Run(ctx, chromedp.Poll[[]bool](`(() => { const ok = document.getElementById('call-live-ok'), bad = document.getElementById('call-live-bad');
		if (!ok || !bad || ok.offsetParent !== null) return null; return [ok.offsetParent !== null, bad.offsetParent !== null]; })()`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || len(live) != 2 || live[0] || !live[1] {
		t.Errorf("live cards while filtering errors: [ok shown, failed shown] = %v (%v); want the ok card hidden and the failed one shown", live, err)
	}
	if s = read(); s.States["error"] != itoa(int64(want["state:error"]+1)) || s.Reload {
		t.Errorf("after the live cards: error count %q, want %d", s.States["error"], want["state:error"]+1)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("console: %v", p)
	}
}

// shifted returns events with their seqs (and the seqs they cite) moved
// by offset, to continue a log of offset events.
func shifted(events []core.Event, offset int64) []core.Event {
	out := make([]core.Event, len(events))
	for i, e := range events {
		e.Seq += offset
		if e.SourceEventSeqs != nil {
			seqs := make([]int64, len(e.SourceEventSeqs))
			for j, s := range e.SourceEventSeqs {
				seqs[j] = s + offset
			}
			e.SourceEventSeqs = seqs
		}
		out[i] = e
	}
	return out
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
