package web_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
	"prism/web"
)

// fetchProbe counts the page's open Datastar requests (a stream, a seek),
// before any page script runs.
const fetchProbe = `
window.__open = 0; window.__fetches = 0;
document.addEventListener('datastar-fetch', e => {
  if (e.detail.type === 'started') { window.__open++; window.__fetches++ }
  if (e.detail.type === 'finished') window.__open--
});
`

// domCards is the JS expression for the page's cards: id → state, in
// document order, with "DUP" for an id shown twice.
const domCards = `(() => { const m = {}; for (const c of document.querySelectorAll('#transcript .card')) m[c.id] = (c.id in m) ? 'DUP' : c.dataset.state; return JSON.stringify(m) })()`

// serverCards is what the server renders for a page: card id → state, as
// domCards formats it.
func serverCards(t *testing.T, e *env, path string) string {
	t.Helper()
	res, body := e.get(t, path)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s = %d", path, res.StatusCode)
	}
	m := map[string]string{}
	var order []string
	d := doc(t, body)
	d.Find(`#transcript [data-testid="tool-card"]`).Each(func(_ int, s *goquery.Selection) {
		id := s.AttrOr("id", "")
		order = append(order, id)
		m[id] = s.AttrOr("data-state", "")
	})
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(id)
		v, _ := json.Marshal(m[id])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// waitCards waits until the browser shows exactly the cards want lists.
func (b *browser) waitCards(t *testing.T, want, why string) {
	t.Helper()
	wantJS, _ := json.Marshal(want)
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](domCards+` === `+string(wantJS), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got := evalIn[string](t, b, domCards)
		t.Fatalf("%s: the page's cards never matched\n got: %s\nwant: %s", why, got, want)
	}
}

// liveSession is a running session for the browser: the scripted session,
// then a turn of several calls that the test commits as it goes.
func liveSession(t testing.TB) []core.Event {
	events := atSession(t)
	b := coretest.NewBuilder(events[len(events)-1].Time + 10)
	b.Events = append([]core.Event(nil), events...)
	for turn := range 2 {
		b.TurnStart().StepStart().User("and again " + itoa(int64(turn)))
		for i := range 6 {
			id := "more-" + itoa(int64(turn)) + "-" + itoa(int64(i))
			b.Call(id, "bash", `{"command":"echo `+id+`"}`).Result(id, strings.Repeat(id+"\n", 30)+"[exit code: 0]", false, nil, nil)
		}
		b.StepEnd()
		if turn == 0 {
			b.TurnEnd(core.TurnCompleted)
		}
	}
	return b.Events
}

// TestBrowser_RewindWhileLive drives a running session's page in headless
// Chromium: the reader steps back while events keep coming (following
// pauses: the page holds the older state, no stream is open), presses live
// (the page catches up from the seq it holds), plays a replay back to live,
// and at each point the page shows exactly the cards the server renders
// for that place — none missing, none doubled. Keys, the Tab order, the
// "N new below" pill and fragments of cards outside the window are
// checked on the way.
func TestBrowser_RewindWhileLive(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, func(d *web.Deps) {
		d.Tuning.Window = 100000
		d.Tuning.PlaybackIdle = time.Millisecond
	})
	events := liveSession(t)
	cut := []int{100, 120, 140, 161, 175, len(events)}
	e.session(t, "s", events[:cut[0]])
	b := newBrowser(t, 1280, 900)
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fetchProbe}); err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="live"]`)))
	b.waitJS(t, `window.__open === 1`)

	// Live: committed events reach the page.
	e.append(t, "s", events[cut[0]:cut[1]]...)
	b.waitCards(t, serverCards(t, e, "/sessions/s"), "live")

	// Rewind one tool call: the page at that call, following paused.
	b.do(t, chromedp.Click(chromedp.CSS(`#transport [data-tt="call-"]`)), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="at"]`)))
	b.waitJS(t, `window.__open === 0`)
	held := evalIn[string](t, b, `document.getElementById('transport').dataset.at`)
	b.waitCards(t, serverCards(t, e, "/sessions/s?at="+held), "rewound to "+held)
	b.waitJS(t, `new URLSearchParams(location.search).get('at') === `+jsString(held))
	if vis := evalIn[bool](t, b, `!document.getElementById('at-banner').hidden`); !vis {
		t.Error("the at-banner is hidden at an event")
	}
	// Events keep coming; the page does not follow them.
	e.append(t, "s", events[cut[1]:cut[2]]...)
	if n := evalIn[int](t, b, `window.__open`); n != 0 {
		t.Errorf("%d requests open while paused", n)
	}
	b.waitCards(t, serverCards(t, e, "/sessions/s?at="+held), "still at "+held)

	// Live: from the seq the page holds, no gap, no duplicate.
	b.do(t, chromedp.Click(chromedp.CSS(`#transport [data-tt="live"]`)), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="live"]`)))
	b.waitCards(t, serverCards(t, e, "/sessions/s"), "back to live")
	b.waitJS(t, `location.search === '' && document.getElementById('at-banner').hidden`)
	e.append(t, "s", events[cut[2]:cut[3]]...)
	b.waitCards(t, serverCards(t, e, "/sessions/s"), "live again")

	// Keys: j/k move between cards, e to an error, ? lists the keys.
	b.do(t, chromedp.KeyEvent("j"))
	first := evalIn[string](t, b, `document.activeElement.id`)
	b.do(t, chromedp.KeyEvent("j"))
	second := evalIn[string](t, b, `document.activeElement.id`)
	b.do(t, chromedp.KeyEvent("k"))
	if back := evalIn[string](t, b, `document.activeElement.id`); !strings.HasPrefix(first, "call-") || !strings.HasPrefix(second, "call-") || second == first || back != first {
		t.Errorf("j, j, k: focus on %q, %q, %q", first, second, back)
	}
	if evalIn[string](t, b, `getComputedStyle(document.activeElement).outlineStyle`) == "none" {
		t.Error("the focused card shows no outline")
	}
	b.do(t, chromedp.KeyEvent("k"), chromedp.KeyEvent("k"), chromedp.KeyEvent("e"))
	if got := evalIn[string](t, b, `document.activeElement.dataset.state || ''`); got != "error" {
		t.Errorf("e: focus on a %q card", got)
	}
	b.do(t, chromedp.KeyEvent("?"))
	b.waitJS(t, `document.getElementById('keys').open`)
	b.do(t, chromedp.KeyEvent("\x1b"))
	b.waitJS(t, `!document.getElementById('keys').open`)

	// Follow live: a reader who scrolled up gets a pill; at the bottom,
	// new cards scroll into view.
	evalIn[any](t, b, `window.scrollTo(0, 0)`)
	b.waitJS(t, `window.scrollY === 0`)
	e.append(t, "s", events[cut[3]:cut[4]]...)
	b.waitJS(t, `!document.getElementById('new-below').hidden && /^\d+ new below$/.test(document.getElementById('new-below').textContent)`)
	if y := evalIn[float64](t, b, `window.scrollY`); y != 0 {
		t.Errorf("the reader was moved to %v", y)
	}
	b.do(t, chromedp.Click(chromedp.CSS(`#new-below`)))
	b.waitJS(t, `document.getElementById('new-below').hidden && window.scrollY + innerHeight >= document.documentElement.scrollHeight - 150`)
	e.append(t, "s", events[cut[4]:cut[5]]...)
	last := views.CallElemID("more-1-5")
	inView := `(() => { const c = document.getElementById('` + last + `'); if (!c) return false; const r = c.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0 })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](inView, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the new card never scrolled into view: %s", evalIn[string](t, b, `JSON.stringify({y: scrollY, h: innerHeight, sh: document.documentElement.scrollHeight, card: document.getElementById('`+last+`') && document.getElementById('`+last+`').getBoundingClientRect().top, pill: document.getElementById('new-below').textContent, hidden: document.getElementById('new-below').hidden})`))
	}
	b.waitCards(t, serverCards(t, e, "/sessions/s"), "followed live")

	// Space plays a replay from where the page stands; it reaches the end
	// of the running session and follows it live.
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s?at=40"), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="at"]`)))
	b.waitCards(t, serverCards(t, e, "/sessions/s?at=40"), "at 40")
	evalIn[any](t, b, `document.activeElement.blur()`)
	b.do(t, chromedp.KeyEvent(" "))
	b.waitJS(t, `document.getElementById('transport').dataset.mode === 'live'`)
	b.waitCards(t, serverCards(t, e, "/sessions/s"), "played to live")
	if evalIn[int](t, b, `window.__open`) != 1 {
		t.Error("after the replay the page does not follow the session")
	}
}

// TestBrowser_JumpsAndTab: a card's fragment outside the window lands on
// it (the window around it, the card current and in view), and the "show
// all" toggle of a read card is reached by Tab and works from the keyboard.
func TestBrowser_JumpsAndTab(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, func(d *web.Deps) { d.Tuning.Window = 30 })
	e.session(t, "big", bigSession(2000))
	b := newBrowser(t, 1280, 900)
	target := views.CallElemID("call-5")
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/big#"+target))
	b.waitJS(t, `(() => { const c = document.getElementById('`+target+`'); if (!c || c.getAttribute('aria-current') !== 'true') return false; const r = c.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0 })()`)
	if q := evalIn[string](t, b, `location.search`); q != "?card="+target {
		t.Errorf("the fragment became %q", q)
	}

	// Tab, from the top, reaches a "show all" toggle; space opens it.
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/big?call=call-2"), chromedp.WaitReady(chromedp.CSS("#transport")))
	evalIn[any](t, b, `document.activeElement.blur(); window.scrollTo(0, 0)`)
	reached := false
	for range 300 {
		b.do(t, chromedp.KeyEvent("\t"))
		if evalIn[bool](t, b, `document.activeElement.classList.contains('expand-toggle')`) {
			reached = true
			break
		}
	}
	if !reached {
		t.Fatal("Tab never reached a show-all toggle")
	}
	if evalIn[string](t, b, `getComputedStyle(document.activeElement.closest('label')).outlineStyle`) == "none" {
		t.Error("the focused toggle shows no outline")
	}
	b.do(t, chromedp.KeyEvent(" "))
	b.waitJS(t, `(() => { const card = document.activeElement.closest('.card'); const row = card && card.querySelector('tr.x'); return !!row && getComputedStyle(row).display === 'table-row' })()`)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestBrowser_ExportOpensFromFile: a session longer than the page's window
// saved with export.html opens from file:// in Chromium with JavaScript
// off, shows every call card, makes no request to any server, and its long
// outputs open and close without script.
func TestBrowser_ExportOpensFromFile(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, nil)
	events := bigSession(1500)
	e.session(t, "big", events)
	calls := len(callIDs(t, events))
	res, body := e.get(t, "/sessions/big/export.html")
	if res.StatusCode != 200 || strings.Contains(body, "<script") {
		t.Fatalf("export.html: %d, script %v", res.StatusCode, strings.Contains(body, "<script"))
	}
	if n := strings.Count(body, `data-testid="tool-card"`); n != calls || calls <= views.DefaultWindow {
		t.Fatalf("the file holds %d cards of %d calls (the page's window is %d)", n, calls, views.DefaultWindow)
	}
	path := filepath.Join(t.TempDir(), "session.html")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, 1280, 900)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var requests []string
	reqs := chromedp.Events(b.ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range reqs {
			if err != nil {
				return
			}
			mu.Lock()
			requests = append(requests, ev.Request.URL)
			mu.Unlock()
		}
	}()
	file := "file://" + path
	b.do(t, chromedp.Navigate(file), chromedp.WaitReady(chromedp.CSS(`[data-testid="export-page"]`)))
	nodes, err := chromedp.Run(b.ctx, chromedp.Nodes(chromedp.CSSAll(`[data-testid="tool-card"]`)))
	if err != nil || len(nodes) != calls {
		t.Errorf("the opened file shows %d cards (%v), want %d", len(nodes), err, calls)
	}
	// A long output opens without script.
	b.do(t, chromedp.Click(chromedp.CSS(`details.more > summary`)), chromedp.WaitReady(chromedp.CSS(`details.more[open]`)))
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(requests, file) {
		t.Errorf("the request listener saw %q, not the file's own load", requests)
	}
	for _, u := range requests {
		if u != file {
			t.Errorf("the file made a request: %s", u)
		}
	}
}
