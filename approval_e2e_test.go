package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"prism/backend"
	"prism/core"
	"prism/core/approval"
	"prism/web"
)

// TestApprovalTwoBrowsers runs the real stack — SQLite, the agent runner on
// a scripted model, the ask rule "gate", the approval service, web — with
// two headless Chromium browsers on one session. Both show the call
// awaiting approval with its buttons (the second after a reload too); the
// first approves; the second sees the card move on, running then ok,
// without a reload; a decision from a stale copy of the card is refused,
// naming the tab that decided; the log holds one decision.
func TestApprovalTwoBrowsers(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	ctx := t.Context()
	asked := make(chan core.Event, 1)
	g := startGateSession(t, func(d *web.Deps) {
		reg := d.Presenter.(*core.Registry)
		rules, err := approval.ParseTools("gate")
		if err != nil {
			t.Fatal(err)
		}
		reg.UsePreExecute(rules.Hook())
		svc, err := approval.NewService(approval.Config{Sessions: d.Runner.(backend.AgentRunner).Runner, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(svc.Close)
		reg.SetApprover(svc)
		d.Approvals = svc
		t.Cleanup(d.Commits.OnCommit(func(_ string, events []core.Event) {
			for _, e := range events {
				if e.Type == core.EventApprovalAsked {
					asked <- e
				}
			}
		}))
	})
	store, id := g.store, g.id
	ts := httptest.NewServer(g.srv.Handler())
	t.Cleanup(ts.Close)
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the gate call never asked for approval")
	}

	const card = `[data-call-id="gate-1"]`
	page := ts.URL + "/sessions/" + id
	a, b := browser(t), browser(t)
	for _, bctx := range []context.Context{a, b} {
		if err := chromedp.Do(bctx, chromedp.Navigate(page),
			chromedp.WaitReady(chromedp.CSS(card+`[data-state="awaiting"] [data-testid="approve"]`))); err != nil {
			t.Fatalf("the awaiting card with its buttons: %v", err)
		}
	}
	// A reload while waiting shows the buttons again (the waiting state
	// comes from the log).
	if err := chromedp.Do(b, chromedp.Reload(),
		chromedp.WaitReady(chromedp.CSS(card+`[data-state="awaiting"] [data-testid="reject"]`))); err != nil {
		t.Fatalf("after a reload: %v", err)
	}
	for _, bctx := range []context.Context{a, b} {
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`window.__fetch.includes('started')`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("a page's stream never started: %v", err)
		}
	}
	// B marks its document and keeps a copy of the awaiting card, as a
	// tab whose stream lagged would still show it.
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`window.__doc = 'b'; window.__stale = document.querySelector('`+card+`').outerHTML; true`)); err != nil {
		t.Fatal(err)
	}
	tabA, err := chromedp.Run(a, chromedp.Evaluate[string](`sessionStorage.getItem('prism-tab')`))
	if err != nil || len(tabA) != 8 {
		t.Fatalf("tab A's id = %q, %v", tabA, err)
	}

	// A approves, with a note.
	if err := chromedp.Do(a, chromedp.SendKeys(card+` input[name="note"]`, "north is safe"),
		chromedp.Click(card+` [data-testid="approve"]`),
		chromedp.WaitReady(chromedp.CSS(`#notice .notice-text`))); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if msg, _ := chromedp.Run(a, chromedp.Evaluate[string](`document.querySelector('#notice').textContent`)); !strings.Contains(msg, "Approved: the call runs.") {
		t.Errorf("A's notice = %q", msg)
	}
	// B sees the card move on without a reload.
	if err := chromedp.Do(b, chromedp.WaitReady(chromedp.CSS(card+`[data-state="running"]`))); err != nil {
		t.Fatalf("B never saw the card run: %v", err)
	}
	states, err := chromedp.Run(b, chromedp.Evaluate[[]string](`window.__states`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"added:awaiting", "attr:running"}; !slices.Equal(states, want) {
		t.Errorf("B's card states = %v, want %v (morphed in place)", states, want)
	}
	if n, _ := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('`+card+` .approval form').length`)); n != 0 {
		t.Errorf("B's running card still has %d decision forms", n)
	}

	// A second decision, from B's stale copy of the card, is refused.
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.querySelector('`+card+`').outerHTML = window.__stale; true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b,
		chromedp.WaitReady(chromedp.CSS(card+`[data-state="awaiting"] [data-testid="reject"]`)),
		chromedp.Click(card+` [data-testid="reject"]`),
		chromedp.WaitReady(chromedp.CSS(`#notice.warn .notice-text`))); err != nil {
		t.Fatalf("stale reject: %v", err)
	}
	msg, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector('#notice .notice-text').textContent`))
	if want := "Already decided: approved by tab " + tabA + " (Headless Chrome at 127.0.0.1)"; !strings.HasPrefix(msg, want) {
		t.Errorf("B's notice = %q, want it to start %q", msg, want)
	}

	g.release()
	for name, bctx := range map[string]context.Context{"A": a, "B": b} {
		if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(card+`[data-state="ok"] [data-testid="approval-decision"]`))); err != nil {
			t.Fatalf("%s never saw the card complete: %v", name, err)
		}
	}
	if doc, _ := chromedp.Run(b, chromedp.Evaluate[string](`window.__doc || ''`)); doc != "b" {
		t.Error("B reloaded")
	}
	verdict, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector('`+card+` [data-testid="approval-decision"]').textContent`))
	if !strings.Contains(verdict, "Approved by tab "+tabA) {
		t.Errorf("B's decided card says %q", verdict)
	}

	l, err := store.LoadSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var decided []core.ApprovalDecided
	for _, e := range l.Events {
		if e.Type == core.EventApprovalDecided {
			var d core.ApprovalDecided
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			decided = append(decided, d)
		}
	}
	if len(decided) != 1 || decided[0].Outcome != core.ApprovalAllowedOnce || decided[0].Note != "north is safe" ||
		decided[0].By != "tab "+tabA+" (Headless Chrome at 127.0.0.1)" {
		t.Errorf("logged decisions = %+v, want A's approval only", decided)
	}
}
