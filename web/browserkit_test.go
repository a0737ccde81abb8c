package web_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium tab with its console problems recorded.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

// newBrowser starts headless Chromium (Debian's, at /usr/bin/chromium) with
// a window of w×h px; it closes when the test ends, and the test fails on
// any console error or uncaught exception.
func newBrowser(t testing.TB, w, h int, opts ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	all := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h)}, opts...)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), all...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	b := &browser{ctx: ctx}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || m.Type == "error" {
				if !strings.Contains(m.Text, "favicon") {
					b.mu.Lock()
					b.problems = append(b.problems, string(m.Type)+": "+m.Text)
					b.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		for _, p := range b.problems {
			t.Errorf("browser console: %s", p)
		}
		b.mu.Unlock()
		cancelT()
		cancel()
		cancelA()
	})
	return b
}

// do runs actions, failing the test on error.
func (b *browser) do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JS expression.
func evalIn[T any](t testing.TB, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitJS polls a JS condition until it holds.
func (b *browser) waitJS(t testing.TB, cond string) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", cond, err)
	}
}

// scheme emulates the light or dark color scheme.
func (b *browser) scheme(t testing.TB, dark bool) {
	t.Helper()
	v := "light"
	if dark {
		v = "dark"
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}}); err != nil {
		t.Fatal(err)
	}
}
