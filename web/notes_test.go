package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/views"
	"prism/web"
)

// withNotes gives a server the notes of its store.
func withNotes(d *web.Deps) {
	d.Notes = d.Sessions.(backend.Source).Store.(web.NoteStore)
}

// notesEnv is a server over a fresh store with session "s", whose one
// call is "c1".
func notesEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil).StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)
	return e
}

// listNotes reads GET /api/sessions/s/notes (with query q).
func listNotes(t *testing.T, e *env, q string) []notes.Note {
	t.Helper()
	res, body := e.do(t, http.MethodGet, "/api/sessions/s/notes"+q, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET notes%s: %d %s", q, res.StatusCode, body)
	}
	var got struct{ Notes []notes.Note }
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	return got.Notes
}

// TestNotesAPI_labelLifecycle: a label made through the annotations API is
// a label note on its call, with its author; PUT replaces the whole label;
// DELETE removes it; the server's own kinds are not the client's to
// change.
func TestNotesAPI_labelLifecycle(t *testing.T) {
	e := notesEnv(t)
	js := "application/json"
	res, body := e.post(t, "/api/sessions/s/annotations", js, `{"callId":"c1","label":"wrong","score":0.50,"note":"see **this**"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	var made struct{ ID string }
	if err := json.Unmarshal([]byte(body), &made); err != nil || made.ID == "" {
		t.Fatalf("POST annotations answered %s (%v), want {id}", body, err)
	}
	got := listNotes(t, e, "")
	if len(got) != 1 || got[0].ID != made.ID || got[0].Kind != notes.KindLabel || got[0].CallID != "c1" ||
		string(got[0].Data) != `{"label":"wrong","score":0.50,"note":"see **this**"}` || !strings.Contains(got[0].Author, "API client") {
		t.Fatalf("notes = %+v", got)
	}
	if got := listNotes(t, e, "?kind=link"); len(got) != 0 {
		t.Errorf("?kind=link = %+v, want none", got)
	}
	if res, body := e.do(t, http.MethodPut, "/api/sessions/s/annotations/"+made.ID, strings.NewReader(`{"label":"slow"}`), "Content-Type", js); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT annotation: %d %s", res.StatusCode, body)
	}
	if got := listNotes(t, e, "?kind=label"); len(got) != 1 || string(got[0].Data) != `{"label":"slow"}` {
		t.Errorf("after PUT notes = %+v, want the whole label replaced", got)
	}
	if res, body := e.do(t, http.MethodDelete, "/api/sessions/s/annotations/"+made.ID, nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE annotation: %d %s", res.StatusCode, body)
	}
	if got := listNotes(t, e, ""); len(got) != 0 {
		t.Errorf("after DELETE notes = %+v", got)
	}
	if a := e.ask(t, http.MethodDelete, "/api/sessions/s/annotations/"+made.ID, "", nil); a.status != http.StatusNotFound || !strings.Contains(a.msg, made.ID) {
		t.Errorf("DELETE twice: %d %q, want 404 naming the note", a.status, a.msg)
	}

	// A note of the server's own (a link) is listed but not the client's.
	link, err := e.store.PutNote(context.Background(), notes.Input{Session: "s", Kind: notes.KindLink, CallID: "c1", Data: json.RawMessage(`{"child":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if a := e.ask(t, http.MethodDelete, "/api/sessions/s/notes/"+link.ID, "", nil); a.status != http.StatusForbidden || a.code != core.CodeForbidden {
		t.Errorf("DELETE a link note: %d %s %q, want 403", a.status, a.code, a.msg)
	}
	if a := e.ask(t, http.MethodPut, "/api/sessions/s/notes/"+link.ID, js, strings.NewReader(`{"kind":"link","data":{}}`)); a.status != http.StatusForbidden {
		t.Errorf("PUT a link note: %d %s %q, want 403", a.status, a.code, a.msg)
	}
	if a := e.ask(t, http.MethodDelete, "/api/sessions/s/annotations/"+link.ID, "", nil); a.status != http.StatusNotFound {
		t.Errorf("DELETE a link note as an annotation: %d %q, want 404", a.status, a.msg)
	}
	if got := listNotes(t, e, "?kind=link"); len(got) != 1 || got[0].ID != link.ID {
		t.Errorf("?kind=link = %+v", got)
	}
}

// TestNotesAPI_badInput: each bad note is refused with the status its
// fault earns and a message naming it; nothing is stored.
func TestNotesAPI_badInput(t *testing.T) {
	e := notesEnv(t)
	big := strings.Repeat("x", notes.MaxData)
	for _, c := range []struct {
		name, path, body string
		status           int
		says             string
	}{
		{"unknown kind", "/api/sessions/s/notes", `{"kind":"mood","data":{}}`, 400, `"mood"`},
		{"no kind", "/api/sessions/s/notes", `{"data":{"label":"x"}}`, 400, "kind"},
		{"the server's kind", "/api/sessions/s/notes", `{"kind":"attention","data":{}}`, 403, "attention"},
		{"past 64 KiB", "/api/sessions/s/notes", `{"kind":"label","data":{"label":"x","note":"` + big + `"}}`, 413, "65536"},
		{"past 64 KiB, annotation", "/api/sessions/s/annotations", `{"label":"x","note":"` + big + `"}`, 413, "65536"},
		{"control characters in a label", "/api/sessions/s/annotations", `{"label":"wr\u001bong"}`, 400, "control characters"},
		{"empty label", "/api/sessions/s/annotations", `{"label":"  "}`, 400, "empty"},
		{"score not a number", "/api/sessions/s/annotations", `{"label":"x","score":"high"}`, 400, "score"},
		{"call not in the session", "/api/sessions/s/annotations", `{"callId":"nope-call","label":"x"}`, 404, "nope-call"},
		{"unknown session", "/api/sessions/nope/annotations", `{"label":"x"}`, 404, "nope"},
		{"unknown field", "/api/sessions/s/annotations", `{"label":"x","colour":"red"}`, 400, "colour"},
	} {
		a := e.ask(t, http.MethodPost, c.path, "application/json", strings.NewReader(c.body))
		if a.status != c.status || !strings.Contains(a.msg, c.says) {
			t.Errorf("%s: %d %s %q, want %d naming %s", c.name, a.status, a.code, a.msg, c.status, c.says)
		}
	}
	if got := listNotes(t, e, ""); len(got) != 0 {
		t.Errorf("bad notes were stored: %+v", got)
	}
}

// TestLabels_live: a label added through the API reaches an open stream
// of the session at once — the card re-rendered with its chip, the note
// as sanitized markdown, in a frame that moves no cursor — and so do its
// edit and its removal; a stream that (re)connects gets the labels as
// they are first; a page at an event before the label shows none.
func TestLabels_live(t *testing.T) {
	e := notesEnv(t)
	last := int64(len(listEventsOf(t, e)) - 1)
	st := e.stream(t, views.SessionStreamURL("s", last))
	hasLabel := func(label string) func(sseEvent) bool {
		return func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-label="`+label+`"`) }
	}
	js := "application/json"
	res, body := e.post(t, "/api/sessions/s/annotations", js,
		`{"callId":"c1","label":"wrong","score":2,"note":"**bold** <script>alert(1)</script> <img src=x onerror=alert(2)>"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	var made struct{ ID string }
	_ = json.Unmarshal([]byte(body), &made)
	evs := st.until(t, hasLabel("wrong"))
	ev := evs[len(evs)-1]
	html := ev.Elements()
	if ev.ID != "" {
		t.Errorf("the labels frame has SSE id %q; it must move no cursor", ev.ID)
	}
	if !strings.Contains(html, `data-call-id="c1"`) || !strings.Contains(html, "<strong>bold</strong>") || !strings.Contains(html, `title="score">2</span>`) {
		t.Errorf("the card does not show the label with its score and note:\n%s", html)
	}
	// The note's HTML is inert: no tag of it is on the page (the edit
	// form's textarea holds its source as escaped text).
	if strings.Contains(html, "<script") || strings.Contains(html, "<img") {
		t.Errorf("the note's HTML reached the page unsanitized:\n%s", html)
	}
	if i := strings.Index(html, `data-testid="label-note"`); i < 0 || strings.Contains(html[i:i+strings.Index(html[i:], "</div>")], "onerror") {
		t.Errorf("the rendered note keeps an attribute of its HTML:\n%s", html)
	}
	if res, body := e.do(t, http.MethodPut, "/api/sessions/s/annotations/"+made.ID, strings.NewReader(`{"label":"slow"}`), "Content-Type", js); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", res.StatusCode, body)
	}
	if evs := st.until(t, hasLabel("slow")); strings.Contains(evs[len(evs)-1].Elements(), `data-label="wrong"`) {
		t.Errorf("the edit left the old label on the card")
	}

	// A stream that reconnects at its cursor gets the labels first.
	again := e.stream(t, views.SessionStreamURL("s", last), "Last-Event-ID", strconv.FormatInt(last, 10))
	if ev := again.next(t); !hasLabel("slow")(ev) {
		t.Errorf("a reconnected stream's first event is not the labelled card: %+v", ev)
	}

	if res, body := e.do(t, http.MethodDelete, "/api/sessions/s/annotations/"+made.ID, nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", res.StatusCode, body)
	}
	if evs := st.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-call-id="c1"`) }); strings.Contains(evs[len(evs)-1].Elements(), "data-label=") {
		t.Errorf("the removed label is still on the card")
	}

	// A label on the whole session is in the page's header, live too.
	if res, body := e.post(t, "/api/sessions/s/annotations", js, `{"label":"good"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST a session label: %d %s", res.StatusCode, body)
	}
	if evs := st.until(t, hasLabel("good")); !strings.Contains(evs[len(evs)-1].Elements(), `id="session-labels"`) {
		t.Errorf("the session's label did not come as the header's labels: %s", evs[len(evs)-1].Elements())
	}
	if _, page := e.get(t, "/sessions/s"); !strings.Contains(page, `id="session-labels"`) || !strings.Contains(page, `data-label="good"`) {
		t.Errorf("the page's header does not show the session's label")
	}

	// Time travel: a label shows from its atSeq on (here the last seq).
	mustPut := func(data string) {
		if _, err := e.store.PutNote(context.Background(), notes.Input{Session: "s", Kind: notes.KindLabel, CallID: "c1", Data: json.RawMessage(data)}); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(`{"label":"flaky"}`)
	if _, page := e.get(t, views.SessionAtURL("s", last)); !strings.Contains(page, `data-label="flaky"`) {
		t.Errorf("the page at the label's seq does not show it")
	}
	if _, page := e.get(t, views.SessionAtURL("s", last-1)); strings.Contains(page, `data-label=`) {
		t.Errorf("the page before the label's seq shows a label")
	}
}

// listEventsOf reads session s's log through the store.
func listEventsOf(t *testing.T, e *env) []core.Event {
	t.Helper()
	evs, err := e.store.EventsAfter(context.Background(), "s", -1)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestLabels_notOnShareLinks: a share link (made without asking for
// labels) carries no trace of a label — its page, its log, its saved page
// and its stream — while the owner's page shows it.
func TestLabels_notOnShareLinks(t *testing.T) {
	e, _ := shareEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil).StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)
	const mark = "zqlabelmark"
	if res, body := e.post(t, "/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"`+mark+`","note":"`+mark+` note"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	if _, page := e.get(t, "/sessions/s"); !strings.Contains(page, mark) {
		t.Fatalf("the owner's page does not show the label")
	}
	res, body := e.post(t, "/api/sessions/s/shares", "application/json", `{}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("share: %d %s", res.StatusCode, body)
	}
	var sh struct{ URL string }
	if err := json.Unmarshal([]byte(body), &sh); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(sh.URL)
	if err != nil {
		t.Fatal(err)
	}
	l := views.ShareLinks(strings.TrimPrefix(u.Path, views.ShareRoutePrefix))
	for _, path := range []string{l.Page(), l.Events(), l.ExportHTML()} {
		res, got := e.get(t, path)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		// (A saved page inlines the stylesheet, whose rules name the
		// labels' classes: the markup is what must not be there.)
		if strings.Contains(got, mark) || strings.Contains(got, "data-label") || strings.Contains(got, `class="label`) {
			i := max(strings.Index(got, mark), strings.Index(got, "data-label"), strings.Index(got, `class="label`))
			t.Errorf("GET %s carries a trace of the label: …%s…", path, got[max(0, i-300):min(len(got), i+200)])
		}
	}
	st := e.stream(t, l.Stream(-1))
	if ev := st.next(t); strings.Contains(strings.Join(ev.Data, "\n"), mark) {
		t.Errorf("the share's stream carries the label")
	}
	// A label written while the share's stream is open does not reach it
	// either: the stream's next event is the next log event.
	if res, body := e.post(t, "/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"`+mark+`2"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	b.TurnStart()
	e.append(t, "s", b.Events[len(b.Events)-1])
	if ev := st.until(t, func(ev sseEvent) bool { return ev.ID != "" }); strings.Contains(strings.Join(ev[len(ev)-1].Data, "\n"), mark) {
		t.Errorf("the share's stream carries the label")
	} else {
		for _, x := range ev {
			if strings.Contains(strings.Join(x.Data, "\n"), mark) {
				t.Errorf("the share's stream carries the label: %+v", x)
			}
		}
	}
}

// TestLabels_suggestedSet: the cards' form suggests the server's label
// set (Deps.Labels) instead of the default one.
func TestLabels_suggestedSet(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) {
		withNotes(d)
		d.Labels = []string{"hallucinated", "needs review"}
	})
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil).StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)
	_, page := e.get(t, "/sessions/s")
	if !strings.Contains(page, `<option value="hallucinated">`) || !strings.Contains(page, `<option value="needs review">`) || strings.Contains(page, `<option value="flaky">`) {
		t.Errorf("the label form does not suggest the server's set")
	}
}
