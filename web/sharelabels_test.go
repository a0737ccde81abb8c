package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// shareLinksOf makes a link to session s from body and returns its URLs.
func shareLinksOf(t *testing.T, e *env, body string) (views.Links, map[string]any) {
	t.Helper()
	return shareLinksOf2(t, e, "s", body)
}

// shareLinksOf2 makes a link to session id from body and returns its URLs.
func shareLinksOf2(t *testing.T, e *env, id, body string) (views.Links, map[string]any) {
	t.Helper()
	res, got := e.post(t, "/api/sessions/"+id+"/shares", "application/json", body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("share %s: %d %s", body, res.StatusCode, got)
	}
	var sh map[string]any
	if err := json.Unmarshal([]byte(got), &sh); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(sh["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return views.ShareLinks(strings.TrimPrefix(u.Path, views.ShareRoutePrefix)), sh
}

// TestLabels_onShareLinksThatAsk: a link made with {"labels": true}
// shows the session's labels — redacted like the rest of the link — on
// its page, its saved page and, live, on its stream; the link remembers
// the choice (the list says labels: true). A link made without it beside
// it still carries no trace of a label, even while labels change.
func TestLabels_onShareLinksThatAsk(t *testing.T) {
	e, _ := shareEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil).StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)
	secret := "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"
	if res, body := e.post(t, "/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"zqwrong","note":"token `+secret+` leaked"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	with, made := shareLinksOf(t, e, `{"redact":true,"labels":true}`)
	if made["labels"] != true {
		t.Errorf("the created link answers labels = %v, want true", made["labels"])
	}
	without, _ := shareLinksOf(t, e, `{"redact":true}`)
	var list struct{ Shares []struct{ Labels bool } }
	e.apiJSON(t, http.MethodGet, "/api/sessions/s/shares", "", &list)
	if len(list.Shares) != 2 || !list.Shares[0].Labels || list.Shares[1].Labels {
		t.Errorf("listed links = %+v, want the first with labels, the second without", list.Shares)
	}

	for _, path := range []string{with.Page(), with.ExportHTML()} {
		_, got := e.get(t, path)
		if !strings.Contains(got, `data-label="zqwrong"`) {
			t.Errorf("GET %s (with labels) does not show the label", path)
		}
		if strings.Contains(got, secret) || !strings.Contains(got, "[redacted:") {
			t.Errorf("GET %s (with labels) does not redact the label's note", path)
		}
		if strings.Contains(got, "API client") {
			t.Errorf("GET %s (with labels) names who made the label", path)
		}
	}
	for _, path := range []string{without.Page(), without.Events(), without.ExportHTML()} {
		if _, got := e.get(t, path); strings.Contains(got, "zqwrong") || strings.Contains(got, "data-label") {
			t.Errorf("GET %s (without labels) carries a trace of the label", path)
		}
	}

	// Live: a label added while both streams are open reaches the link
	// that shows labels, never the other.
	stWith, stWithout := e.stream(t, with.Stream(-1)), e.stream(t, without.Stream(-1))
	stWith.next(t)
	stWithout.next(t)
	if res, body := e.post(t, "/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"zqslow"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	stWith.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-label="zqslow"`) })
	b.TurnStart()
	e.append(t, "s", b.Events[len(b.Events)-1])
	for _, ev := range stWithout.until(t, func(ev sseEvent) bool { return ev.ID != "" }) {
		if d := strings.Join(ev.Data, "\n"); strings.Contains(d, "zq") || strings.Contains(d, "data-label") {
			t.Errorf("the stream of the link without labels carries a label: %s", d)
		}
	}
}
