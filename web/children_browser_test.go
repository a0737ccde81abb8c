package web_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
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
