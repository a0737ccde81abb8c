package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"prism/core"
)

// TestForkHereInABrowser: on the owner's page the ended turn's "fork
// here" opens its form; submitting it with a prompt forks the session and
// lands on the fork's page, whose header names the source and the turn.
// The transport offers "fork here" only while it sits at a turn/end.
func TestForkHereInABrowser(t *testing.T) {
	ts, _, events := forkServer(t)
	ctx := headless(t)
	var end int64 = -1
	for _, e := range events {
		if e.Type == core.EventTurnEnd {
			end = e.Seq
		}
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/sessions/demo"),
		chromedp.Click(`[data-testid="turn"] [data-testid="fork-here"] summary`),
		chromedp.WaitVisible(`[data-testid="turn"] [data-testid="fork-form"] textarea[name="prompt"]`),
		chromedp.SendKeys(`[data-testid="turn"] [data-testid="fork-form"] textarea[name="prompt"]`, "Once more, please"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		dir := filepath.Join("artifacts", "browser")
		if os.MkdirAll(dir, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(dir, "fork-form.png"), shot, 0o644)
		}
	}
	err = chromedp.Do(ctx,
		chromedp.Click(`[data-testid="turn"] [data-testid="fork-submit"]`),
		chromedp.WaitVisible(`[data-testid="fork-of"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	forkOf, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="fork-of"] dd').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	location, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(strings.Fields(forkOf), " ") != "demo at turn 1" || !strings.HasPrefix(location, "/sessions/") || location == "/sessions/demo" {
		t.Fatalf("after the form: at %s, fork of %q", location, forkOf)
	}
	for _, tc := range []struct {
		at     int64
		hidden bool
	}{{end, false}, {end - 1, true}} {
		err := chromedp.Do(ctx,
			chromedp.Navigate(ts.URL+"/sessions/demo?at="+strconv.FormatInt(tc.at, 10)),
			chromedp.WaitReady(`[data-testid="tt-fork"]`),
		)
		if err != nil {
			t.Fatal(err)
		}
		hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="tt-fork"]').hidden`))
		if err != nil {
			t.Fatal(err)
		}
		if hidden != tc.hidden {
			t.Errorf("at event %d the transport's fork here is hidden=%v, want %v", tc.at, hidden, tc.hidden)
		}
	}
}
