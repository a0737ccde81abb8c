package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/views"
)

// TestBrowser_NestedChildLive: in a real browser, the parent's card of a
// subagent call nests its child; opened by the reader, it stays open while
// the child's next commits arrive over the parent's stream and turn its
// card from pending to completed and the child from running to finished.
// Screenshots of the opened nest, light and dark, at 1280 and 390 px, go
// to $PRISM_SHOTS when set.
func TestBrowser_NestedChildLive(t *testing.T) {
	e := newEnv(t, withNotes)
	kb, _ := family(t, e)
	b := newBrowser(t, 1280, 900)
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/p"),
		chromedp.WaitReady(chromedp.CSS(`article[data-call-id="s1"] [data-testid="child-summary"]`)))
	// The stream is open once the page's cursor signal exists; open the nest.
	b.waitJS(t, `document.querySelector('#stream') !== null`)
	b.do(t, chromedp.Click(chromedp.CSS(`article[data-call-id="s1"] [data-testid="child-summary"] .child-kind`)))
	b.waitJS(t, `document.querySelector('article[data-call-id="s1"] details.child-cards').open`)
	if !evalIn[bool](t, b, `document.querySelector('article[data-call-id="s1"] [data-testid="child"] article[data-call-id="kc1"]').dataset.state === 'pending'`) {
		t.Fatal("the nested card is not pending at first")
	}
	kb.Result("kc1", "two files", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	e.append(t, "k", kb.Events[len(kb.Events)-3:]...)
	b.waitJS(t, `document.querySelector('article[data-call-id="s1"] [data-testid="child"]').dataset.childStatus === 'finished'`)
	b.waitJS(t, `document.querySelector('article[data-call-id="s1"] [data-testid="child"] article[data-call-id="kc1"]').dataset.state === 'ok'`)
	if !evalIn[bool](t, b, `document.querySelector('article[data-call-id="s1"] details.child-cards').open`) {
		t.Error("the nest closed when the live frame morphed its card")
	}
	// The completed nested card looks completed inside its still pending
	// parent: the parent's pending look (pulsing dot) stays on its own head.
	if anim := evalIn[string](t, b, `getComputedStyle(document.querySelector('article[data-call-id="s1"] article[data-call-id="kc1"] .dot')).animationName`); anim != "none" {
		t.Errorf("the completed nested card's dot is animated %q (its pending parent's look)", anim)
	}
	if anim := evalIn[string](t, b, `getComputedStyle(document.querySelector('article[data-call-id="s1"] > .card-head .dot')).animationName`); anim != "pulse" {
		t.Errorf("the pending parent's dot is animated %q, want pulse", anim)
	}
	shots(t, b)
	// The list: the child is collapsed under its parent until its count
	// is clicked.
	b.do(t, chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitReady(chromedp.CSS(`[data-session-id="p"] [data-testid="row-kids"]`)))
	if evalIn[bool](t, b, `document.querySelector('[data-session-id="k"]').checkVisibility()`) {
		t.Error("the child's row shows before its parent's count is clicked")
	}
	b.do(t, chromedp.Click(chromedp.CSS(`[data-session-id="p"] [data-testid="row-kids"]`)))
	b.waitJS(t, `document.querySelector('[data-session-id="k"]').checkVisibility()`)
}

// shots writes screenshots of the opened nest to $PRISM_SHOTS, if set.
func shots(t *testing.T, b *browser) {
	dir := os.Getenv("PRISM_SHOTS")
	if dir == "" {
		return
	}
	for _, w := range []int64{1280, 390} {
		for _, dark := range []bool{false, true} {
			b.scheme(t, dark)
			b.do(t, chromedp.EmulateViewport(w, 900), chromedp.ScrollIntoView(chromedp.CSS(`article[data-call-id="s1"]`)))
			png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			name := map[bool]string{false: "light", true: "dark"}[dark]
			if err := os.WriteFile(filepath.Join(dir, name+"-"+itoa(w)+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBrowser_NestedChildWindow: a child's commits reach the open parent
// page as what changed (its summary line, new cards appended, cards past
// the window of views.MaxNestedCards removed, the earlier-calls line
// morphed): after twelve more calls, one commit each, the nest shows the
// latest ten cards, in order, once each, and counts the rest; a result
// morphs its nested card in place.
func TestBrowser_NestedChildWindow(t *testing.T) {
	e := newEnv(t, withNotes)
	kb, _ := family(t, e)
	b := newBrowser(t, 1280, 900)
	b.do(t, chromedp.Navigate(e.ts.URL+"/sessions/p"),
		chromedp.WaitReady(chromedp.CSS(`article[data-call-id="s1"] [data-testid="child-summary"]`)))
	b.waitJS(t, `document.querySelector('#stream') !== null`)
	const nest = `article[data-call-id="s1"] [data-testid="child"]`
	for i := range 12 {
		id := "kx" + itoa(int64(i))
		n := len(kb.Events)
		kb.Call(id, "note", `{"title":"x"}`)
		e.append(t, "k", kb.Events[n:]...)
		b.waitJS(t, `document.querySelector('`+nest+` article[data-call-id="`+id+`"]') !== null`)
	}
	b.waitJS(t, `document.querySelector('`+nest+` [data-testid="child-calls"]').textContent === '13 calls'`)
	got := evalIn[[]string](t, b, `[...document.querySelectorAll('`+nest+` article[data-call-id]')].map(a => a.dataset.callId)`)
	var want []string
	for i := 2; i < 12; i++ {
		want = append(want, "kx"+itoa(int64(i)))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("nested cards %v, want %v (the latest %d, in order, once each)", got, want, views.MaxNestedCards)
	}
	if s := evalIn[string](t, b, `document.querySelector('`+nest+` [data-testid="child-earlier"]').textContent`); !strings.Contains(s, "3 earlier calls") {
		t.Errorf("earlier line %q, want 3 earlier calls", s)
	}
	kb.Result("kx11", "done", false, nil, nil)
	e.append(t, "k", kb.Events[len(kb.Events)-1])
	b.waitJS(t, `document.querySelector('`+nest+` article[data-call-id="kx11"]').dataset.state === 'ok'`)
	if n := evalIn[int](t, b, `document.querySelectorAll('`+nest+` article[data-call-id]').length`); n != views.MaxNestedCards {
		t.Errorf("%d nested cards after the result, want %d", n, views.MaxNestedCards)
	}
}
