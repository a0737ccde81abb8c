package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"prism/core"

	"prism/core/coretest"
)

const chromium = "/usr/bin/chromium"

// hostile is tool output that would run script if it reached the DOM as
// markup, or as a link, or as an attribute.
const hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1"><a href="javascript:window.__pwned=1">click</a>"' onmouseover="window.__pwned=1` + "\r\n\x1b[31mred\x1b[0m"

// probeJS records, before any page script runs, every appearance of the
// live card and every change of its data-state, and Datastar's fetch
// events.
const probeJS = `
window.__log = []; window.__fetch = [];
const rec = (kind, el, old) => window.__log.push({kind, state: el.getAttribute('data-state'), old: old || '', t: Math.round(performance.now())});
new MutationObserver(ms => { for (const m of ms) {
  if (m.type === 'attributes' && m.target.id === 'call-live') rec('attr', m.target, m.oldValue);
  for (const n of m.addedNodes) if (n.nodeType === 1) {
    const el = n.id === 'call-live' ? n : (n.querySelector && n.querySelector('#call-live'));
    if (el) rec('added', el);
  }
}}).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true, attributeFilter: ['data-state']});
document.addEventListener('datastar-fetch', e => window.__fetch.push(e.detail.type));
`

type mutation struct {
	Kind  string `json:"kind"`
	State string `json:"state"`
	Old   string `json:"old"`
	T     int    `json:"t"`
}

// TestBrowser_PendingCardCompletesWithoutReload drives a session by
// committing events while headless Chromium shows its page: the card
// appears pending and the same element becomes ok, no reload; hostile
// tool output never executes.
func TestBrowser_PendingCardCompletesWithoutReload(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	e := newEnv(t, nil)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User(hostile)
	b.Assistant("Running **it** now. " + hostile)
	b.Call("old", "bash", `{"command":"cat evil.html"}`).Result("old", hostile+"\n[exit code: 0]", false, nil, nil)
	// A watched session (tailed from a dsh session file), so that a
	// rewrite of the file replaces its log below.
	e.watched(t, core.SessionHeader{ID: "b1", CreatedAt: t0, Cwd: "/work"}, b.Events)

	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000))
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	var mu sync.Mutex
	var problems []string
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || m.Type == "error" {
				if !strings.Contains(m.Text, "favicon") {
					mu.Lock()
					problems = append(problems, string(m.Type)+": "+m.Text)
					mu.Unlock()
				}
			}
		}
	}()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probeJS}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/sessions/b1"),
		chromedp.WaitReady(chromedp.CSS(`#call-old[data-state="ok"]`))); err != nil {
		t.Fatal(err)
	}
	// The stream is open once Datastar reports the fetch started.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.__fetch.includes('started')`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the stream never started: %v", err)
	}

	args := `{"command":"echo \"<img src=x onerror=window.__pwned=1>\"","description":"<script>window.__pwned=1</script>"}`
	b.Call("live", "bash", args)
	e.append(t, "b1", b.Events[len(b.Events)-1])
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`#call-live[data-state="pending"]`))); err != nil {
		t.Fatal(err)
	}
	b.Result("live", hostile+"\n[exit code: 0]", false, nil, nil)
	e.append(t, "b1", b.Events[len(b.Events)-1])
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`#call-live[data-state="ok"]`))); err != nil {
		t.Fatal(err)
	}
	log, err := chromedp.Run(ctx, chromedp.Evaluate[[]mutation](`window.__log`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("#call-live mutations: %+v", log)
	if len(log) < 2 || log[0].Kind != "added" || log[0].State != "pending" {
		t.Fatalf("the card did not appear pending first: %+v", log)
	}
	final := log[len(log)-1]
	if final.Kind != "attr" || final.Old != "pending" || final.State != "ok" {
		t.Errorf("the same element was not morphed pending → ok: %+v", log)
	}
	for _, m := range log[1:] {
		if m.Kind == "added" {
			t.Errorf("the card was re-added instead of morphed: %+v", log)
		}
	}
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	if err != nil {
		t.Fatal(err)
	}
	if pwned {
		t.Error("hostile tool output executed (window.__pwned is set)")
	}
	nav, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`))
	if err != nil || nav != 1 {
		t.Errorf("navigations = %d (%v), want 1: no reload", nav, err)
	}

	// The store replaces the log (a rewritten watched file) with a shorter
	// one: the page morphs to the new log and follows it live.
	fresh := coretest.NewBuilder(t0)
	fresh.TurnStart().StepStart().User("rewritten").Call("fresh", "note", `{}`).Result("fresh", "ok", false, nil, nil)
	e.watched(t, core.SessionHeader{ID: "b1", CreatedAt: t0, Cwd: "/work"}, fresh.Events)
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`#call-fresh[data-state="ok"]`))); err != nil {
		t.Fatalf("the replaced log never reached the page: %v", err)
	}
	fresh.Call("next", "note", `{}`)
	e.append(t, "b1", fresh.Events[len(fresh.Events)-1])
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`#call-next[data-state="pending"]`))); err != nil {
		t.Fatalf("the new log is not followed live: %v", err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#call-old, #call-live').length`)); err != nil || n != 0 {
		t.Errorf("cards of the old log still shown: %d (%v)", n, err)
	}
	if nav, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`)); err != nil || nav != 1 {
		t.Errorf("navigations after the replace = %d (%v), want 1", nav, err)
	}

	// A long session: the first paint is a window; "show earlier" loads
	// the rest in place.
	long := coretest.NewBuilder(t0)
	for range 60 {
		long.TurnStart().StepStart().User("again").Call("x", "note", `{}`).Result("x", "ok", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	}
	e.session(t, "long", long.Events)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/sessions/long"),
		chromedp.WaitReady(chromedp.CSS(`[data-testid="load-earlier"]`))); err != nil {
		t.Fatal(err)
	}
	before, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=tool-card]').length`))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="load-earlier"]`)),
		chromedp.WaitReady(chromedp.CSS(`.earlier.loaded`))); err != nil {
		t.Fatal(err)
	}
	after, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=tool-card]').length`))
	if before == 0 || after <= before {
		t.Errorf("load earlier: %d cards before, %d after", before, after)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.ts.URL+"/sessions/b1"), chromedp.WaitReady(chromedp.CSS(`#call-fresh[data-state="ok"]`))); err != nil {
		t.Fatal(err)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "artifacts", "browser")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "session.png"), shot, 0o644)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}
