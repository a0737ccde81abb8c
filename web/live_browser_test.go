package web_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/web"
)

// cancelShown is the JS expression for whether the page shows "cancel
// turn" (the form is in the page whenever the runner owns the session).
const cancelShown = `(() => { const f = document.querySelector('[data-testid="cancel-form"]'); if (!f) throw new Error('no cancel form'); return getComputedStyle(f).display !== 'none' && f.getBoundingClientRect().height > 0 })()`

// TestBrowser_CancelOnlyWhileRunning: "cancel turn" is offered only while a
// turn runs: not on an idle session, and live on an open page — it goes
// when the turn ends and comes back when the next turn starts. A page at
// an earlier event (whose status pill is that event's) does not offer it.
func TestBrowser_CancelOnlyWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	or := &ownerRunner{mine: map[string]bool{"s": true}}
	e := newEnv(t, func(d *web.Deps) { d.Runner = or })
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go").Assistant("working").StepEnd().TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)

	br := newBrowser(t, 1280, 900)
	br.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`#session-status[data-status="idle"]`)))
	if evalIn[bool](t, br, cancelShown) {
		t.Fatal("an idle session shows cancel turn")
	}
	// The stream is open once the page holds the server's last seq.
	next := len(b.Events)
	b.TurnStart()
	e.append(t, "s", b.Events[next:]...)
	br.waitJS(t, `document.querySelector('#session-status').dataset.status === 'running'`)
	br.waitJS(t, cancelShown)
	next = len(b.Events)
	b.TurnEnd(core.TurnCompleted)
	e.append(t, "s", b.Events[next:]...)
	br.waitJS(t, `document.querySelector('#session-status').dataset.status === 'idle'`)
	br.waitJS(t, `!`+cancelShown)

	// Running again, but the page stands at the first turn's start.
	next = len(b.Events)
	b.TurnStart()
	e.append(t, "s", b.Events[next:]...)
	br.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s?at=0"), chromedp.WaitReady(chromedp.CSS(`#session-status[data-status="running"]`)))
	if evalIn[bool](t, br, cancelShown) {
		t.Error("a page at an earlier event shows cancel turn")
	}
	br.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`#session-status[data-status="running"]`)))
	if !evalIn[bool](t, br, cancelShown) {
		t.Error("the live page of a running session hides cancel turn")
	}
}

// TestBrowser_DeletedRowLeavesOpenList: a list open in a tab loses a
// session's row, without a reload, when the session is deleted elsewhere;
// the other rows stay.
func TestBrowser_DeletedRowLeavesOpenList(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, func(d *web.Deps) {
		d.Deleter = backend.Deleter{Store: d.Sessions.(backend.Source).Store}
		d.Tuning.ListThrottle = 1
	})
	events := demoEvents(t)
	e.session(t, "keep", events)
	e.session(t, "gone", events)
	br := newBrowser(t, 1280, 900)
	br.do(t, chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitReady(chromedp.CSS(`tr[data-session-id="gone"]`)))
	// The list's stream is subscribed once a change reaches the page
	// (the stream sends rows only after it subscribed).
	e.append(t, "keep", core.Event{Type: core.EventSessionTitle, Seq: int64(len(events)), Time: t0, Data: []byte(`{"title":"kept and renamed"}`)})
	br.waitJS(t, `document.querySelector('tr[data-session-id="keep"]').textContent.includes('kept and renamed')`)
	if res, b := e.do(t, http.MethodDelete, "/api/sessions/gone", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d %s", res.StatusCode, b)
	}
	br.waitJS(t, `!document.querySelector('tr[data-session-id="gone"]')`)
	if n := evalIn[int](t, br, `document.querySelectorAll('tr[data-session-id="keep"]').length`); n != 1 {
		t.Errorf("%d rows of the kept session", n)
	}
}
