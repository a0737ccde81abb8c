package web_test

import (
	"net/http"
	"strings"
	"testing"

	"prism/core/coretest"
	"prism/views"
)

// TestLabels_saveAsTest: on the owner's page a label chip on a completed
// call has a "save as test" link downloading that call's test.zip; a label
// on a pending call and one on the whole session have none, nor has a
// share link's page, which shows no labels.
func TestLabels_saveAsTest(t *testing.T) {
	e, _ := shareEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil)
	b.Call("c2", "note", `{"title":"waits"}`)
	e.session(t, "s", b.Events)
	for _, body := range []string{`{"callId":"c1","label":"wrong"}`, `{"callId":"c2","label":"wrong"}`, `{"label":"wrong"}`} {
		if res, got := e.post(t, "/api/sessions/s/annotations", "application/json", body); res.StatusCode != http.StatusCreated {
			t.Fatalf("POST annotations %s: %d %s", body, res.StatusCode, got)
		}
	}
	_, page := e.get(t, "/sessions/s")
	d := doc(t, page)
	card := d.Find(`[data-call-id="c1"]`).First()
	cardID, _ := card.Attr("id")
	a := card.Find(`[data-testid="label"] a[data-testid="label-save-as-test"]`)
	href, ok := a.Attr("href")
	_, download := a.Attr("download")
	if a.Length() != 1 || !ok || !download || href != views.CallTestURL("s", "c1", cardID) {
		t.Fatalf("the completed call's label chip: %d save-as-test links, href %q, download %v; want %q", a.Length(), href, download, views.CallTestURL("s", "c1", cardID))
	}
	if res, _ := e.do(t, http.MethodGet, href, nil); res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/zip" {
		t.Errorf("GET %s = %d %q", href, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if n := d.Find(`[data-call-id="c2"] [data-testid="label"]`).Length(); n != 1 {
		t.Fatalf("the pending call shows %d labels, want 1", n)
	}
	if n := d.Find(`[data-call-id="c2"] [data-testid="label-save-as-test"]`).Length(); n != 0 {
		t.Errorf("the pending call's label offers save as test")
	}
	session := d.Find("#" + views.SessionLabelsID)
	if session.Find(`[data-testid="label"]`).Length() != 1 || session.Find(`[data-testid="label-save-as-test"]`).Length() != 0 {
		t.Errorf("the session's label: want one chip and no save-as-test link:\n%s", func() string { h, _ := session.Html(); return h }())
	}
	_, link := e.share(t, "s", "{}")
	if _, shared := e.get(t, link); strings.Contains(shared, "label-save-as-test") {
		t.Error("a share link's page offers save as test on a label")
	}
}
