package views_test

import (
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core/coretest"
	"prism/views"
)

// TestFold_NotStartedCardShowsTheRequest: crash repair answers a call the
// assistant asked for but that was never logged; its card shows the tool
// and arguments of the assistant's request, and the header counts it with
// the other calls (as many calls as cards).
func TestFold_NotStartedCardShowsTheRequest(t *testing.T) {
	b := coretest.NewBuilder(1_764_500_000_000)
	b.TurnStart().StepStart().User("look")
	b.Assistant("", [3]string{"c1", "note", `{"title":"first"}`})
	b.Call("c1", "note", `{"title":"first"}`).Result("c1", "ok", false, nil, nil)
	b.StepEnd().StepStart()
	b.Assistant("", [3]string{"c3", "grep", `{"pattern":"TODO"}`})
	b.Repair() // c3 was never logged: repair answers it "not started"
	tl := views.Fold(hdr(), b.Events, presenters(t))

	for _, want := range []struct{ call, name, args string }{
		{"c3", "grep", `{"pattern":"TODO"}`},
	} {
		cards := tl.CardsByCallID(want.call)
		if len(cards) != 1 || cards[0].Name != want.name || cards[0].Args != want.args || !cards[0].Requested || cards[0].HasCall {
			t.Fatalf("card of %s = %+v, want %s %s from the request", want.call, cards, want.name, want.args)
		}
	}
	html, err := views.Render(context.Background(), views.SessionPage(views.NewSessionPage(views.PageMeta{}, tl, 100, false)))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	card := doc.Find(`[data-call-id="c3"]`)
	if got := card.Find(".tool").Text(); got != "grep" {
		t.Errorf("not-started card's tool = %q, want grep", got)
	}
	if !strings.Contains(card.Text(), `"pattern": "TODO"`) {
		t.Errorf("not-started card does not show the requested arguments: %s", card.Text())
	}
	nCards := doc.Find(`[data-testid="tool-card"]`).Length()
	if got := strings.TrimSpace(doc.Find(`[data-testid="stat-calls"]`).Text()); got != strings.TrimSpace(views.Count(nCards)) {
		t.Errorf("header counts %s calls beside %d cards", got, nCards)
	}
}
