package views_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// TestWaterfall: an ended turn's timeline has one row per call on the
// turn's time axis; calls that ran at once overlap, a later call starts
// after them, a call the turn stopped runs to the turn's end; each row
// links to its card.
func TestWaterfall(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()               // 0, 10
	b.Call("a", "note", `{"title":"A"}`)    // 20
	b.Call("b", "note", `{"title":"B"}`)    // 30
	b.Result("b", "B", false, nil, nil)     // 40
	b.Result("a", "A", false, nil, nil)     // 50
	b.Call("c", "note", `{"title":"C"}`)    // 60
	b.Result("c", "C", true, nil, nil)      // 70
	b.Call("d", "bash", `{"command":"x"}`)  // 80: never finishes
	b.StepEnd().TurnEnd(core.TurnCompleted) // 90, 100
	tl := views.Fold(hdr(), b.Events, presenters(t))
	page, err := views.Render(context.Background(), views.SessionPage(views.NewSessionPage(testMeta, tl, 100, true)))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	wf := doc.Find(`[data-testid="turn"] [data-testid="waterfall"]`)
	if wf.Length() != 1 {
		t.Fatalf("%d waterfalls in the turn row, want 1", wf.Length())
	}
	if s := wf.Find("summary").Text(); !strings.Contains(s, "4 calls") || !strings.Contains(s, "2 in parallel") {
		t.Errorf("summary %q", strings.Join(strings.Fields(s), " "))
	}
	type bar struct{ x, w int }
	bars := map[string]bar{}
	var order []string
	wf.Find(`[data-testid="waterfall-row"]`).Each(func(_ int, r *goquery.Selection) {
		id, _ := r.Attr("data-card-id")
		href, _ := r.Attr("href")
		if href != "#"+id || doc.Find(`article[id="`+id+`"]`).Length() != 1 {
			t.Errorf("row %s links to %q, not to a card on the page", id, href)
		}
		x, _ := strconv.Atoi(r.AttrOr("data-x", ""))
		w, _ := strconv.Atoi(r.AttrOr("data-w", ""))
		rect := r.Find("rect.wf-span")
		if rect.AttrOr("x", "") != strconv.Itoa(x) || rect.AttrOr("width", "") != strconv.Itoa(w) {
			t.Errorf("row %s: the drawn bar is not the row's span", id)
		}
		bars[id] = bar{x, w}
		order = append(order, id)
	})
	ids := func(id string) string { return views.CallElemID(id) }
	if strings.Join(order, " ") != strings.Join([]string{ids("a"), ids("b"), ids("c"), ids("d")}, " ") {
		t.Fatalf("rows %v, want the calls in log order", order)
	}
	// The axis is the turn: 0–100 ms over 1000 units.
	want := map[string]bar{ids("a"): {200, 300}, ids("b"): {300, 100}, ids("c"): {600, 100}, ids("d"): {800, 200}}
	for id, w := range want {
		if bars[id] != w {
			t.Errorf("bar of %s = %+v, want %+v", id, bars[id], w)
		}
	}
	if !strings.Contains(wf.Find(`[data-card-id="`+ids("d")+`"]`).Text(), "unfinished") {
		t.Error("the stopped call is not marked unfinished")
	}
	// A running turn has no timeline yet.
	tl = views.Fold(hdr(), b.Events[:5], presenters(t))
	page, err = views.Render(context.Background(), views.SessionPage(views.NewSessionPage(testMeta, tl, 100, true)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, `data-testid="waterfall"`) {
		t.Error("a running turn shows a timeline")
	}
}
