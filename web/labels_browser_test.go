package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/core/coretest"
)

// TestBrowser_LabelAcrossTabs: a label made with a card's form in one tab
// appears on the card in another tab without a reload, with its note as
// sanitized markdown (the note's HTML inert); removing it there takes it
// off the first tab too.
func TestBrowser_LabelAcrossTabs(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	e := newEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil).StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)

	const card = `document.querySelector('article[data-call-id="c1"]')`
	one, two := newBrowser(t, 1280, 900), newBrowser(t, 390, 900)
	for _, br := range []*browser{one, two} {
		br.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`article[data-call-id="c1"] [data-testid="label-add"]`)))
	}
	if evalIn[bool](t, two, card+`.querySelector('[data-label]') !== null`) {
		t.Fatal("the card has a label before any was made")
	}
	// Tab one fills the card's form and saves.
	one.do(t, chromedp.Evaluate[chromedp.Void](card+`.querySelector('[data-testid="label-add"]').open = true`))
	one.do(t, chromedp.Evaluate[chromedp.Void](`(() => {
		const f = `+card+`.querySelector('[data-testid="label-add"] form');
		f.querySelector('[name=label]').value = 'wrong';
		f.querySelector('[name=score]').value = '2';
		f.querySelector('[name=note]').value = '**bold** <img src=x onerror="window.pwned=1">';
		f.querySelector('button[type=submit]').click();
	})()`))
	two.waitJS(t, card+`.querySelector('[data-label="wrong"]') !== null`)
	if !evalIn[bool](t, two, card+`.querySelector('.label-note strong') !== null && `+card+`.querySelector('.label-note img') === null && window.pwned === undefined`) {
		t.Error("the note is not sanitized markdown in the other tab")
	}
	if got := evalIn[string](t, two, card+`.querySelector('[data-testid="label-score"]').textContent`); got != "2" {
		t.Errorf("score = %q, want 2", got)
	}
	one.waitJS(t, card+`.querySelector('[data-label="wrong"]') !== null`)

	// Tab two removes it; tab one sees it go.
	two.do(t, chromedp.Evaluate[chromedp.Void](card+`.querySelector('[data-testid="label-remove"]').click()`))
	one.waitJS(t, card+`.querySelector('[data-label]') === null`)
	two.waitJS(t, card+`.querySelector('[data-label]') === null`)
}
