package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/core/coretest"
	"prism/core/price"
	"prism/views"
	"prism/web"
)

// The inspector in a real browser on a long session: going live from the
// middle, links that land a card clear of the sticky bars, the first
// window's turn, hand-written call ids.

// longSession is a session of turns×steps×calls tool calls, each call id
// spelt as dsh logs them (call_0000000t_n): a window of the default size
// opens in the middle of a turn.
func longSession(turns, steps, calls int) []core.Event {
	b := coretest.NewBuilder(t0)
	n := 0
	for turn := range turns {
		b.TurnStart().StepStart().User(fmt.Sprintf("turn %d: go on", turn+1))
		for step := range steps {
			if step > 0 {
				b.StepStart()
			}
			var ids []string
			for range calls {
				n++
				id := fmt.Sprintf("call_%08x_%d", turn+1, n)
				ids = append(ids, id)
				b.Call(id, "bash", `{"command":"echo step `+itoa(int64(step))+` of turn `+itoa(int64(turn))+`"}`)
			}
			for _, id := range ids {
				b.Result(id, strings.Repeat(id+"\n", 3)+"[exit code: 0]", false, nil, nil)
			}
			b.StepEnd()
		}
		b.TurnEnd(core.TurnCompleted)
	}
	return b.Events
}

// shoot saves the viewport as PRISM_SHOTS/name.png when PRISM_SHOTS names
// a directory (screenshots to look at; nothing otherwise).
func shoot(t *testing.T, b *browser, name string) {
	t.Helper()
	dir := os.Getenv("PRISM_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// phone sizes the tab's viewport as a phone's (390×844).
func (b *browser) phone(t *testing.T) {
	t.Helper()
	b.do(t, chromedp.EmulateViewport(390, 844))
}

// TestBrowser_LiveFromTheMiddle: on a long running session, a page at an
// event in the middle that goes live (the live button, then the l key)
// shows what a fresh load of the live page shows — the latest window —
// not every card after the event appended to the old window; the "N new
// below" pill counts nothing the move brought, and the page then follows
// the session.
func TestBrowser_LiveFromTheMiddle(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, nil)
	events := longSession(12, 10, 3)
	tail := coretest.NewBuilder(events[len(events)-1].Time + 10)
	tail.Events = append([]core.Event(nil), events...)
	tail.TurnStart().StepStart().User("and more").Call("last_1", "bash", `{"command":"true"}`)
	events = tail.Events
	e.session(t, "s", events)
	mid := len(events) / 3
	b := newBrowser(t, 1280, 900)
	for _, how := range []string{"button", "key"} {
		b.do(t, chromedp.Navigate(fmt.Sprintf("%s/sessions/s?at=%d", e.ts.URL, mid)), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="at"]`)))
		at := evalIn[int](t, b, `document.querySelectorAll('#transcript .card').length`)
		if how == "button" {
			b.do(t, chromedp.Click(chromedp.CSS(`#transport [data-tt="live"]`)))
		} else {
			evalIn[any](t, b, `document.activeElement.blur()`)
			b.do(t, chromedp.KeyEvent("l"))
		}
		b.waitJS(t, `document.getElementById('transport').dataset.mode === 'live'`)
		b.waitCards(t, serverCards(t, e, "/sessions/s"), "live by the "+how+" from event "+itoa(int64(mid))+" ("+itoa(int64(at))+" cards there)")
		if n := evalIn[int](t, b, `document.querySelectorAll('#transcript .card').length`); n > views.DefaultWindow {
			t.Errorf("live by the %s: %d cards on the page, more than a window", how, n)
		}
		if pill := evalIn[bool](t, b, `document.getElementById('new-below').hidden`); !pill {
			t.Errorf("live by the %s: the pill says %q", how, evalIn[string](t, b, `document.getElementById('new-below').textContent`))
		}
		shoot(t, b, "live-from-middle-"+how)
	}
	// The page follows the session from there.
	next := coretest.NewBuilder(events[len(events)-1].Time + 10)
	next.Events = append([]core.Event(nil), events...)
	next.Result("last_1", "done", false, nil, nil)
	e.append(t, "s", next.Events[len(events):]...)
	b.waitJS(t, `document.getElementById('`+views.CallElemID("last_1")+`')?.dataset.state === 'ok'`)
}

// TestBrowser_LinkedCardClearsTheStickyBars: a card reached by a link —
// its fragment, ?call= with a fragment (a search hit, the projections
// page's way back) — lands with its head (tool, title) in view below the
// sticky top bar and filter bar, at 1280 and at 390 px, and the root's
// scroll padding equals what the sticky bars cover.
func TestBrowser_LinkedCardClearsTheStickyBars(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, nil)
	e.session(t, "s", longSession(4, 8, 3))
	id := fmt.Sprintf("call_%08x_%d", 3, 70)
	elem := views.CallElemID(id)
	// clear: the card's head lies below the sticky bars and in the
	// window, and what shows at its title's middle is the title.
	clear := `(() => { const c = document.getElementById('` + elem + `'); if (!c) return 'no card'; const head = c.querySelector('.card-head'); const r = head.getBoundingClientRect();
	  let cover = 0; for (const el of document.querySelectorAll('.topbar, #filter-bar')) if (getComputedStyle(el).position === 'sticky') cover = Math.max(cover, el.getBoundingClientRect().bottom);
	  if (r.top < cover) return 'head at ' + r.top + ' under the bars to ' + cover;
	  if (r.bottom > innerHeight) return 'head below the window';
	  const pad = parseFloat(getComputedStyle(document.documentElement).scrollPaddingTop);
	  if (Math.abs(pad - cover - 8) > 1) return 'scroll padding ' + pad + ', the bars cover ' + cover;
	  const title = head.querySelector('.title') || head; const tr = title.getBoundingClientRect();
	  const hit = document.elementFromPoint(tr.x + Math.min(tr.width / 2, 40), tr.y + tr.height / 2);
	  return head.contains(hit) ? '' : 'title covered by ' + (hit ? hit.className : 'nothing') })()`
	for _, size := range []string{"1280", "390"} {
		b := newBrowser(t, 1280, 900)
		if size == "390" {
			b.phone(t)
		}
		for _, link := range []string{
			"/sessions/s#" + elem,
			views.SessionCallURL("s", id, "") + "#" + elem,
			views.SessionCallURL("s", id, ""),
		} {
			b.do(t, chromedp.Navigate(e.ts.URL+link), chromedp.WaitReady(chromedp.CSS(`#`+elem+`[aria-current="true"]`)))
			b.waitJS(t, `document.activeElement && document.activeElement.id === '`+elem+`'`)
			if got := evalIn[string](t, b, clear); got != "" {
				t.Errorf("%s px, %s: %s", size, link, got)
			}
		}
		shoot(t, b, "linked-card-"+size)
	}
}

// TestBrowser_FirstWindowNamesItsTurn: a window that opens in the middle
// of a turn says the turn of its first step ("turn 4 · step 3"); a step
// under its own turn row does not repeat it. A card named by the call id
// as the log spells it — #call-call_…, ?call=, ?card=, the projections
// page's URL — is found.
func TestBrowser_FirstWindowNamesItsTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, func(d *web.Deps) { d.Tuning.Window = 40 })
	e.session(t, "s", longSession(6, 10, 3))
	b := newBrowser(t, 1280, 900)
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`#transcript .step`)))
	first := evalIn[string](t, b, `(() => { const s = document.querySelector('#transcript > .earlier + .step'); return s ? s.querySelector('.step-no').innerText : 'the window opens with ' + document.querySelector('#transcript > :not(.earlier)').className })()`)
	if ok, _ := regexp.MatchString(`^turn \d+ · step \d+$`, first); !ok {
		t.Errorf("the window's first step reads %q", first)
	}
	if n := evalIn[int](t, b, `Array.from(document.querySelectorAll('#transcript .step-turn')).filter(e => e.checkVisibility()).length`); n != 1 {
		t.Errorf("%d steps show their turn, want the first one only", n)
	}
	shoot(t, b, "first-window-turn")

	id := fmt.Sprintf("call_%08x_%d", 2, 40)
	elem := views.CallElemID(id)
	for _, link := range []string{
		"/sessions/s#call-" + id,
		"/sessions/s?call=call-" + id,
		"/sessions/s?card=call-" + id,
		"/sessions/s?call=" + elem,
	} {
		b.do(t, chromedp.Navigate(e.ts.URL+link), chromedp.WaitReady(chromedp.CSS(`#`+elem+`[aria-current="true"]`)))
	}
	for _, ref := range []string{id, "call-" + id, elem} {
		res, body := e.get(t, "/sessions/s/calls/"+ref)
		if res.StatusCode != 200 || !strings.Contains(body, `data-testid="call-page"`) {
			t.Errorf("the projections page of %q: %d", ref, res.StatusCode)
		}
	}
}

// TestBrowser_NoSidewaysScroll: with a price table, on sessions whose
// titles, ids, paths and arguments are long unbroken words, no page — the
// list, a session, a call's projections, search hits — is wider than the
// window at 1280 or at 390 px, light or dark.
func TestBrowser_NoSidewaysScroll(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	tab, err := price.Parse([]byte(`{"scripted-1": {"input": 0.27, "output": 1.10}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(d *web.Deps) { d.Prices = tab })
	long := "/home/someone/projects/" + strings.Repeat("a_very_long_directory_name/", 4) + "main.go"
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("Fix " + long + " and " + strings.Repeat("x", 90))
	b.Assistant("Reading it.", [3]string{"call_c90599a4_1", "read", `{"file_path":"` + long + `"}`})
	b.Call("call_c90599a4_1", "read", `{"file_path":"`+long+`"}`)
	b.Result("call_c90599a4_1", "1\tpackage main\n2\t// "+strings.Repeat("y", 200), false, nil, nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	e.session(t, "s-"+strings.Repeat("0123456789", 6), b.Events)
	e.session(t, "demo", demoEvents(t))
	id := "s-" + strings.Repeat("0123456789", 6)
	pages := []string{"/", "/sessions/" + id, views.CallURL(id, "call_c90599a4_1", ""), "/sessions/demo", views.SearchURL("main", "", "")}
	for _, size := range []int64{1280, 390} {
		for _, dark := range []bool{false, true} {
			br := newBrowser(t, 1280, 900)
			br.do(t, chromedp.EmulateViewport(size, 844))
			br.scheme(t, dark)
			for _, p := range pages {
				br.do(t, chromedp.Navigate(e.ts.URL+p))
				br.waitJS(t, `document.readyState === 'complete'`)
				w := evalIn[[]int](t, br, `document.querySelectorAll('details').forEach(d => d.open = true); [document.documentElement.scrollWidth, document.documentElement.clientWidth]`)
				if w[0] > w[1] {
					wide := evalIn[string](t, br, `Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(-3).map(e => e.tagName + '.' + e.className).join(', ')`)
					t.Errorf("%d px, dark %v, %s: scrollWidth %d > %d (past the edge: %s)", size, dark, p, w[0], w[1], wide)
				}
			}
			if size == 1280 && !dark || size == 390 && dark {
				br.do(t, chromedp.Navigate(e.ts.URL+"/"))
				br.waitJS(t, `document.readyState === 'complete'`)
				shoot(t, br, fmt.Sprintf("wide-list-%d-%v", size, dark))
			}
		}
	}
}

// TestBrowser_EndGrowsAndRewindDropsThePill: while a session runs, the
// live page's transport end ("of M", the scrubber's range) grows with the
// events the stream brings; a reader who scrolled up and got an "N new
// below" pill loses it when a rewind re-renders the page (nothing at an
// event is new below).
func TestBrowser_EndGrowsAndRewindDropsThePill(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, nil)
	events := liveSession(t)
	cut := len(events) - 8
	e.session(t, "s", events[:cut])
	b := newBrowser(t, 1280, 900)
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="live"]`)))
	evalIn[any](t, b, `window.scrollTo(0, 0)`)
	b.waitJS(t, `window.scrollY === 0`)
	e.append(t, "s", events[cut:]...)
	last := itoa(events[len(events)-1].Seq)
	b.waitJS(t, `document.getElementById('tt-range').max === '`+last+`' && document.getElementById('transport').dataset.of === '`+last+`'`)
	b.waitJS(t, `!document.getElementById('new-below').hidden`)
	// Back to the start, the reader still at the top: no scroll moves.
	b.do(t, chromedp.Click(chromedp.CSS(`#transport [data-tt="start"]`)), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="at"]`)))
	b.waitJS(t, `document.getElementById('transport').dataset.renderedAt === '0'`)
	if !evalIn[bool](t, b, `document.getElementById('new-below').hidden`) {
		t.Errorf("at an event the pill still says %q", evalIn[string](t, b, `document.getElementById('new-below').textContent`))
	}
	if got := evalIn[string](t, b, `document.querySelector('#at-banner [data-testid="at-of"]').textContent.trim()`); got != last {
		t.Errorf("at-banner: of %s, want of %s", got, last)
	}
	shoot(t, b, "rewound-no-pill")
}

// TestBrowser_ShareLinkSaysWhatItShows: a reader of a whole-session link
// whose link is revoked while the page is open is told so where they look
// (above the transport, scrolled anywhere), and the "live" badge stops
// claiming the page follows the session; a link scoped up to an event of a
// running session says it is a snapshot up to that event and shows no
// live badge.
func TestBrowser_ShareLinkSaysWhatItShows(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e, _ := shareEnv(t, nil)
	events := liveSession(t)
	e.session(t, "s1", events)
	whole, wholePath := e.share(t, "s1", `{}`)
	_, scopedPath := e.share(t, "s1", `{"upToSeq": 50}`)
	b := newBrowser(t, 1280, 900)
	liveMark := `getComputedStyle(document.querySelector('#transport .tt-live .live-mark')).backgroundColor`

	b.do(t, chromedp.Navigate(e.base()+wholePath), chromedp.WaitReady(chromedp.CSS(`#transport[data-mode="live"][data-follow]`)))
	b.waitJS(t, `document.querySelectorAll('#transcript .card').length > 0`)
	red := evalIn[string](t, b, liveMark)
	evalIn[any](t, b, `window.scrollTo(0, 0)`)
	if res := e.apiJSON(t, "DELETE", "/api/shares/"+whole.ID, "", nil); res.StatusCode != 204 {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	b.waitJS(t, `/revoked/.test(document.getElementById('stream-status').textContent)`)
	if got := evalIn[string](t, b, `(() => { const r = document.getElementById('stream-status').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight ? '' : 'at ' + r.top + '–' + r.bottom })()`); got != "" {
		t.Errorf("the revoked link's message is out of view: %s", got)
	}
	if got := evalIn[string](t, b, liveMark); got == red {
		t.Errorf("the revoked link's page still shows the live badge (%s)", got)
	}
	shoot(t, b, "share-revoked")

	b.do(t, chromedp.Navigate(e.base()+scopedPath), chromedp.WaitReady(chromedp.CSS(`[data-testid="snapshot-note"]`)))
	if got := evalIn[string](t, b, `document.querySelector('[data-testid="snapshot-note"]').innerText`); !strings.Contains(got, "up to event 50 of a running session") {
		t.Errorf("the scoped link says %q", got)
	}
	if got := evalIn[string](t, b, liveMark); got == red {
		t.Errorf("the scoped link's page shows the live badge (%s)", got)
	}
	shoot(t, b, "share-scoped")
}
