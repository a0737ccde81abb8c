package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/approval"
	"prism/views"
)

// askedSeq returns the seq of session id's approval/asked event.
func (a *approvalEnv) askedSeq(t *testing.T, id string) int64 {
	t.Helper()
	l, err := a.store.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Events {
		if e.Type == core.EventApprovalAsked {
			return e.Seq
		}
	}
	t.Fatalf("session %s has no %s event", id, core.EventApprovalAsked)
	return -1
}

// decisionForms returns how many decision forms a page or patch holds on
// call c1's card, and the card's state.
func decisionForms(t *testing.T, html string) (int, string) {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	card := d.Find(`[data-call-id="c1"]`)
	st, _ := card.Attr("data-state")
	return card.Find(`[data-testid="approval-form"]`).Length(), st
}

// TestApprovals_TimeTravel: a page at an event shows an awaiting card as
// it was then — awaiting, counted in the header, without decision forms —
// while the session waits and after the decision; a playback through the
// wait sends it read-only too; a page that stood at the event and goes live
// while the call still waits gets the card's decision form on its stream.
func TestApprovals_TimeTravel(t *testing.T) {
	a := newApprovalEnv(t, approval.Config{}, planSteps)
	id, asked := a.start(t)
	seq := a.askedSeq(t, id)

	_, live := a.get(t, views.SessionURL(id))
	if n, st := decisionForms(t, live); n != 1 || st != views.StateAwaiting {
		t.Fatalf("live page: %d decision forms, state %q (want 1, awaiting)", n, st)
	}
	_, at := a.get(t, views.SessionAtURL(id, seq))
	if n, st := decisionForms(t, at); n != 0 || st != views.StateAwaiting {
		t.Errorf("page at the asked event while it waits: %d decision forms, state %q (want 0, awaiting)", n, st)
	}

	// Going live from the event while the call waits: the stream first
	// gives the card its form, then says the page is live.
	sc := a.stream(t, views.SessionStreamURL(id, seq)+"&"+signalsQuery(seq))
	first := sc.next(t)
	if n, st := decisionForms(t, first.Elements()); first.Type != "datastar-patch-elements" || n != 1 || st != views.StateAwaiting {
		t.Errorf("going live: first event %s with %d decision forms on a %q card (want the awaiting card with its form)", first.Type, n, st)
	}
	if next := sc.next(t); next.field("signals") != `{"ttAt":-1,"ttMode":"live"}` {
		t.Errorf("going live: then %+v, want the live position", next)
	}
	sc.cancel()

	form := url.Values{"decision": {"reject"}, "note": {"not now"}}.Encode()
	if res, body := a.post(t, views.ApprovalURL(id, asked.ID), "application/x-www-form-urlencoded", form, "Datastar-Request", "true", "Prism-Tab", "tt000001"); res.StatusCode != 200 {
		t.Fatalf("decision = %d %s", res.StatusCode, body)
	}
	a.waitEnd(t)

	// After the decision: the page at the event still shows the wait as it
	// was then, read-only; the live page shows the decision.
	_, at = a.get(t, views.SessionAtURL(id, seq))
	if n, st := decisionForms(t, at); n != 0 || st != views.StateAwaiting {
		t.Errorf("page at the asked event after the decision: %d decision forms, state %q (want 0, awaiting)", n, st)
	}
	d := doc(t, at)
	if got := d.Find(`[data-testid="stat-awaiting"]`).Text(); got != "1 waiting" {
		t.Errorf("header at the asked event: awaiting stat %q, want \"1 waiting\"", got)
	}
	if d.Find(`[data-testid="at-banner"]`).Length() != 1 || d.Find(`[data-testid="at-seq"]`).Text() != itoa(seq) {
		t.Errorf("page at the asked event has no 'at event %d' banner", seq)
	}
	if d.Find(`[data-call-id="c1"] [data-testid="approval-decision"]`).Length() != 0 {
		t.Error("page at the asked event shows the later decision")
	}
	_, live = a.get(t, views.SessionURL(id))
	if n, st := decisionForms(t, live); n != 0 || st == views.StateAwaiting {
		t.Errorf("live page after the decision: %d decision forms, state %q", n, st)
	}

	// A playback up to the asked event sends the awaiting card read-only.
	blocks := rawStream(t, a.env, views.SessionStreamURL(id, seq-1)+"&until="+itoa(seq))
	frames := strings.Join(blocksUntil(t, blocks, "id: "+itoa(seq)+"\n"), "\n")
	if !strings.Contains(frames, `data-state="awaiting"`) || strings.Contains(frames, `data-testid="approval-form"`) {
		t.Errorf("playback of the asked event: want the awaiting card without a form, got\n%s", frames)
	}
}
