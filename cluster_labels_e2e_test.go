package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"prism/internal/pgtest"
	"prism/store/storetest"
)

// TestClusterLabelLive: two prism nodes on one PostgreSQL database; a
// label made with a card's form in a tab of node A appears on the card in
// a tab of node B without a reload (the note's NOTIFY reaches B's hub),
// and its removal through B's tab takes it off A's.
func TestClusterLabelLive(t *testing.T) {
	dbURL := pgtest.DB(t)
	a := startNode(t, "A", dbURL, "--no-demo")
	b := startNode(t, "B", dbURL, "--no-demo")
	id := postFile(t, a, storetest.Fixtures[1:]+"/basic/session.jsonl")

	const card = `document.querySelector('article[data-call-id="call_00_a"]')`
	open := func(ctx context.Context, n *node) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(n.url+"/sessions/"+id),
			chromedp.WaitReady(chromedp.CSS(`article[data-call-id="call_00_a"] [data-testid="label-add"]`))); err != nil {
			t.Fatalf("node %s's page: %v", n.name, err)
		}
	}
	one := headless(t)
	open(one, a)                            // starts the browser
	two, cancel := chromedp.NewContext(one) // a second tab of the same browser
	t.Cleanup(cancel)
	open(two, b)
	if err := chromedp.Do(one, chromedp.Evaluate[chromedp.Void](`(() => {
		`+card+`.querySelector('[data-testid="label-add"]').open = true;
		const f = `+card+`.querySelector('[data-testid="label-add"] form');
		f.querySelector('[name=label]').value = 'zqcluster';
		f.querySelector('[name=note]').value = 'seen on **both** nodes';
		f.querySelector('button[type=submit]').click();
	})()`)); err != nil {
		t.Fatal(err)
	}
	poll := func(ctx context.Context, where, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
	}
	poll(two, "node B's tab never showed the label made on node A", card+`.querySelector('[data-label="zqcluster"]') !== null && `+card+`.querySelector('.label-note strong') !== null`)
	if err := chromedp.Do(two, chromedp.Evaluate[chromedp.Void](card+`.querySelector('[data-testid="label-remove"]').click()`)); err != nil {
		t.Fatal(err)
	}
	poll(one, "node A's tab kept the label removed on node B", card+`.querySelector('[data-label]') === null`)
	if nav, err := chromedp.Run(two, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`)); err != nil || nav != 1 {
		t.Errorf("navigations on node B's tab = %d (%v), want 1: no reload", nav, err)
	}
}
