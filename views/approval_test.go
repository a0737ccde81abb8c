package views_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// awaitingLog is a bash call waiting for approval, its reason and its
// command hostile markup.
func awaitingLog() *coretest.Builder {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	b.Call("c1", "bash", `{"command":"rm -rf <b>build</b>/","description":"clean"}`)
	b.Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a/1", ToolName: "bash", CallID: "c1", Reason: `<img src=x onerror=alert(1)> matches`}, nil)
	return b
}

func cardDoc(t *testing.T, tl *views.Timeline, r views.R) *goquery.Selection {
	t.Helper()
	html, err := views.Render(context.Background(), views.CardComponent(views.NewCardViewIn(tl.CardsByCallID("c1")[0], r)))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Find("img, b").Length() != 0 {
		t.Fatalf("markup from the log reached the card: %s", html)
	}
	return doc.Find(`[data-testid="tool-card"]`)
}

// TestApprovalCard: an awaiting card says why it asks, shows the call's
// arguments and offers Approve and Reject posting to the approval's URL —
// unless read-only (a share link, a session this server does not run),
// where it shows the same waiting state without the form.
func TestApprovalCard(t *testing.T) {
	b := awaitingLog()
	tl := views.Fold(hdr(), b.Events, presenters(t))
	card := cardDoc(t, tl, views.NewR(tl, views.SessionLinks(tl.Header().ID)))
	if st, _ := card.Attr("data-state"); st != views.StateAwaiting {
		t.Fatalf("data-state = %q, want awaiting", st)
	}
	if got := card.Find(`[data-testid="approval-reason"]`).Text(); got != `<img src=x onerror=alert(1)> matches` {
		t.Errorf("reason = %q", got)
	}
	if got := card.Find(".cmd").Text(); !strings.Contains(got, "rm -rf <b>build</b>/") {
		t.Errorf("the arguments are not shown: %q", got)
	}
	form := card.Find(`[data-testid="approval-form"]`)
	if action, _ := form.Attr("action"); action != views.ApprovalURL("s1", "a/1") || action != "/sessions/s1/approvals/a%2F1" {
		t.Errorf("form action = %q", action)
	}
	for _, sel := range []string{`[data-testid="approve"][name="decision"][value="approve"]`, `[data-testid="reject"][name="decision"][value="reject"]`, `input[name="note"]`} {
		if form.Find(sel).Length() != 1 {
			t.Errorf("form has no %s", sel)
		}
	}
	if card.Find(".term-running").Length() != 0 {
		t.Error("an awaiting command is shown running")
	}

	// Read-only: the same waiting state, no form.
	tl.SetReadOnly(true)
	ro := cardDoc(t, tl, views.NewR(tl, views.SessionLinks(tl.Header().ID)))
	if st, _ := ro.Attr("data-state"); st != views.StateAwaiting {
		t.Errorf("read-only data-state = %q", st)
	}
	if ro.Find("form, button[name=decision]").Length() != 0 || ro.Find(`[data-testid="approval-waiting"]`).Length() != 1 {
		t.Errorf("read-only card: form %d, waiting note %d", ro.Find("form").Length(), ro.Find(`[data-testid="approval-waiting"]`).Length())
	}
	if ro.Find(`[data-testid="approval-reason"]`).Length() != 1 {
		t.Error("the read-only card lost the reason")
	}
	// Share links and saved files never decide, whoever runs the session.
	tl.SetReadOnly(false)
	for name, l := range map[string]views.Links{"share": views.ShareLinks("tok"), "offline": views.OfflineLinks()} {
		if n := cardDoc(t, tl, views.NewR(tl, l)).Find("form").Length(); n != 0 {
			t.Errorf("%s card has %d forms", name, n)
		}
	}
	// The flag is the card component's: R decides, whatever the timeline.
	if n := cardDoc(t, tl, views.R{SessionID: "s1", ReadOnly: true}).Find("form").Length(); n != 0 {
		t.Errorf("R.ReadOnly card has %d forms", n)
	}
}

// TestApprovalCardDecided: a decided approval drops the form everywhere
// and says who decided what, their note, or why no person did.
func TestApprovalCardDecided(t *testing.T) {
	for _, tc := range []struct {
		name    string
		decided core.ApprovalDecided
		result  bool
		state   string
		verdict string
		note    string
	}{
		{"approved", core.ApprovalDecided{ID: "a/1", Outcome: core.ApprovalAllowedOnce, By: "the owner <x>", Note: "go"}, false,
			views.StateRunning, "Approved by the owner <x>", "go"},
		{"rejected", core.ApprovalDecided{ID: "a/1", Outcome: core.ApprovalRejected, By: "a page", Note: "<i>no</i>"}, true,
			views.StateError, "Rejected by a page", "<i>no</i>"},
		{"timed out", core.ApprovalDecided{ID: "a/1", Outcome: core.ApprovalCancelled, Reason: "nobody decided within 1m0s"}, true,
			views.StateError, "Approval cancelled nobody decided within 1m0s", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := awaitingLog()
			b.Add(core.EventApprovalDecided, tc.decided, nil)
			if tc.result {
				b.Result("c1", "Error: no", true, nil, nil)
			}
			tl := views.Fold(hdr(), b.Events, presenters(t))
			card := cardDoc(t, tl, views.NewR(tl, views.SessionLinks(tl.Header().ID)))
			if st, _ := card.Attr("data-state"); st != tc.state {
				t.Errorf("data-state = %q, want %q", st, tc.state)
			}
			if card.Find("form").Length() != 0 {
				t.Error("a decided card offers the form")
			}
			a := card.Find(`[data-testid="approval"]`)
			if st, _ := a.Attr("data-approval-state"); st != string(tc.decided.Outcome) {
				t.Errorf("data-approval-state = %q", st)
			}
			line := a.Find(`[data-testid="approval-decision"]`)
			line.Find("time").Remove()
			if got := strings.TrimSpace(line.Text()); got != tc.verdict {
				t.Errorf("verdict = %q, want %q", got, tc.verdict)
			}
			if got := a.Find(`[data-testid="approval-note"]`).Text(); got != tc.note {
				t.Errorf("note = %q, want %q", got, tc.note)
			}
		})
	}
}

// TestApprovalUpdates: approval/asked and approval/decided morph the card
// and the header (the awaiting count) live, as the page renders them from
// the log; events that name no card are rows of their own.
func TestApprovalUpdates(t *testing.T) {
	b := awaitingLog()
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a/1", Outcome: core.ApprovalAllowedOnce}, nil)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a/1", Outcome: core.ApprovalRejected}, nil) // a second decision
	b.Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a2", ToolName: "bash", CallID: "nope"}, nil)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "zz", Outcome: core.ApprovalRejected}, nil)
	tl := views.NewTimeline(hdr(), presenters(t))
	var awaiting []int64
	for i := range b.Events {
		e := &b.Events[i]
		u := tl.Apply(e)
		awaiting = append(awaiting, tl.Summary().Awaiting)
		morphsCard := false
		for _, n := range u.Morphs {
			morphsCard = morphsCard || n.ElemID() == views.CallElemID("c1")
		}
		switch i {
		case 3, 4: // asked, then the first decision
			if !morphsCard || !u.Header {
				t.Errorf("%s: morphs the card %v, the header %v", e.Type, morphsCard, u.Header)
			}
		case 5, 6, 7:
			if morphsCard || len(u.Appends) != 1 {
				t.Errorf("event %d (%s): morphs the card %v, appends %d rows; want one raw row", i, e.Type, morphsCard, len(u.Appends))
			}
		}
	}
	if got := tl.CardsByCallID("c1")[0].Approval.Outcome; got != core.ApprovalAllowedOnce {
		t.Errorf("outcome = %s: the first decision stands", got)
	}
	// asked, decided, a stray decision, an asked without a card (still a
	// person waited), a stray decision.
	if want := []int64{0, 0, 0, 1, 0, 0, 1, 0}; !slices.Equal(awaiting, want) {
		t.Errorf("Summary.Awaiting after each event = %v, want %v", awaiting, want)
	}
}
