package web_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/backend"
	"prism/core"
	"prism/views"
	"prism/web"
)

const crashedID = "7d0e1f2a-3b4c-4d5e-8f60-718293a4b5c6"

type importAnswer struct {
	Sessions []web.ImportedSession `json:"sessions"`
	IDs      []string              `json:"ids"`
}

// TestAPI_ImportAsReplace is the import API's table: ?as= and ?replace=1,
// per-session answers, and refused imports that leave the store as it was.
func TestAPI_ImportAsReplace(t *testing.T) {
	raw, err := os.ReadFile("../testdata/dsh/crashed/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	original := string(raw)
	changed := strings.Replace(original, `"cwd":"`, `"cwd":"/moved`, 1)
	if changed == original {
		t.Fatal("fixture has no cwd to change")
	}
	zipFile, err := os.ReadFile("../testdata/dsh/export/session-export.zip")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := shareEnv(t, nil)
	post := func(query, body string) (int, string) {
		res, b := e.post(t, "/api/sessions/import"+query, "application/x-ndjson", body)
		return res.StatusCode, b
	}
	if code, b := post("?name=session.jsonl", original); code != http.StatusCreated {
		t.Fatalf("first import = %d %s", code, b)
	}
	_, link := e.share(t, crashedID, "{}")

	// The fixture's torn tail and crash repair, as prism import notes them.
	const torn = "line 7 has no trailing newline (a torn write); ignored"
	notes := func(id string, more ...string) []string {
		return append([]string{"session " + id + ": torn tail ignored: " + torn,
			"session " + id + ": last turn was open; appended 4 crash-repair events (status interrupted)"}, more...)
	}
	tests := []struct {
		name   string
		query  string
		body   string
		status int
		want   []web.ImportedSession // nil: an error answer
		errSub string
	}{
		{"same file", "", original, 200, []web.ImportedSession{{ID: crashedID, Status: "unchanged", Events: 9, Torn: torn, Repaired: 4,
			Notes: notes(crashedID, "session "+crashedID+" was already imported; unchanged")}}, ""},
		{"a different copy", "", changed, 409, nil, "import it under another id (--as NEW_ID, ?as=NEW_ID) or replace the stored one (--replace, ?replace=1)"},
		{"bad replace value", "?replace=yes", changed, 400, nil, `replace must be 1 or 0, got "yes"`},
		{"empty as", "?as=", changed, 400, nil, "as must name the new session id"},
		{"as with a bad id", "?as=a%2Fb", changed, 400, nil, `import as "a/b": a session id may hold only`},
		{"as with several sessions", "?as=x&name=e.zip", string(zipFile), 400, nil, "(--as, ?as=) needs a file holding exactly one session; it holds 2"},
		{"as", "?as=copy-1", changed, 201, []web.ImportedSession{{ID: "copy-1", Status: "created", Events: 9, Original: crashedID, Torn: torn, Repaired: 4,
			Notes: append([]string{"session " + crashedID + " imported as copy-1"}, notes("copy-1")...)}}, ""},
		{"replace", "?replace=1", changed, 201, []web.ImportedSession{{ID: crashedID, Status: "replaced", Events: 9, Revoked: 1, Torn: torn, Repaired: 4,
			Notes: notes(crashedID, "replaced session "+crashedID+" (its 9 stored events by the file's 9; 1 share links revoked)")}}, ""},
		{"replace again: unchanged", "?replace=1", changed, 200, []web.ImportedSession{{ID: crashedID, Status: "unchanged", Events: 9, Torn: torn, Repaired: 4,
			Notes: notes(crashedID, "session "+crashedID+" was already imported; unchanged")}}, ""},
	}
	for _, tt := range tests {
		_, before := e.get(t, "/api/sessions")
		code, b := post(tt.query, tt.body)
		if code != tt.status {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, code, tt.status, b)
			continue
		}
		if tt.want == nil {
			var ea struct{ Error string }
			json.Unmarshal([]byte(b), &ea)
			if !strings.Contains(ea.Error, tt.errSub) {
				t.Errorf("%s: answer %s, want it to contain %q", tt.name, b, tt.errSub)
			}
			if _, after := e.get(t, "/api/sessions"); after != before {
				t.Errorf("%s: a refused import changed the list:\n%s\n%s", tt.name, before, after)
			}
			continue
		}
		var a importAnswer
		if err := json.Unmarshal([]byte(b), &a); err != nil {
			t.Fatalf("%s: %v in %s", tt.name, err, b)
		}
		if diff := cmp.Diff(tt.want, a.Sessions); diff != "" || len(a.IDs) != len(tt.want) || a.IDs[0] != tt.want[0].ID {
			t.Errorf("%s: sessions (-want +got):\n%s ids %v", tt.name, diff, a.IDs)
		}
	}
	// The replaced session's link no longer works; its log is the file's.
	if res, _ := e.get(t, link); res.StatusCode != http.StatusNotFound {
		t.Errorf("share link of the replaced session = %d, want 404", res.StatusCode)
	}
	if _, export := e.get(t, "/api/sessions/"+crashedID+"/events"); !strings.Contains(export, `"cwd":"/moved`) {
		t.Error("the replaced session's export does not hold the file's header")
	}
	// ?as= takes a raw body: a multipart form is refused before it is read.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "a.jsonl")
	fw.Write(raw)
	mw.Close()
	res, b := e.post(t, "/api/sessions/import?as=y", mw.FormDataContentType(), form.String())
	if res.StatusCode != 400 || !strings.Contains(b, "send the file as the raw request body") {
		t.Errorf("multipart with as = %d %s", res.StatusCode, b)
	}
}

// TestDelete: the page's button and DELETE /api/sessions/{id} remove a
// session, its events and share links; a running session of this server
// is refused until cancelled; without a Deleter there is no button.
func TestDelete(t *testing.T) {
	or := &ownerRunner{mine: map[string]bool{"running": true}}
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Deleter = backend.Deleter{Store: d.Sessions.(backend.Source).Store.(backend.Remover)}
		d.Runner = or
	})
	events := demoEvents(t)
	e.session(t, "s1", events)
	e.session(t, "s2", events)
	e.session(t, "running", events[:3]) // a turn started, not ended
	_, link := e.share(t, "s1", "{}")
	e.share(t, "s1", "{}")

	_, page := e.get(t, "/sessions/s1")
	pg := doc(t, page)
	if got := pg.Find(`[data-testid="delete-form"]`).AttrOr("action", ""); got != "/sessions/s1/delete" {
		t.Errorf("delete form posts to %q", got)
	}
	if got := strings.Join(strings.Fields(pg.Find(`[data-testid="delete-form"] p`).Text()), " "); !strings.Contains(got, "and 2 share links (they stop working)") {
		t.Errorf("confirmation text = %q", got)
	}
	_, page = e.get(t, "/sessions/running")
	pg = doc(t, page)
	if pg.Find(`[data-testid="delete-form"]`).Length() != 0 || pg.Find(`[data-testid="delete-running"]`).Length() != 1 {
		t.Error("a running session's page offers delete instead of saying to cancel first")
	}

	res, b := e.do(t, http.MethodDelete, "/api/sessions/running", nil)
	if res.StatusCode != http.StatusConflict || !strings.Contains(b, "cancel its turn before deleting it") {
		t.Errorf("DELETE of a running session = %d %s", res.StatusCode, b)
	}
	stream := e.stream(t, "/sessions/s2/stream?after=-1")
	// Its first frame (the catch-up from -1) comes after it subscribed to
	// the session's live hub: the delete below reaches it there.
	stream.next(t)
	res, b = e.do(t, http.MethodDelete, "/api/sessions/s2", nil)
	// A page open on it is told, live.
	stream.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "this session was deleted") })
	var d web.DeletedSession
	if err := json.Unmarshal([]byte(b), &d); err != nil || res.StatusCode != 200 {
		t.Fatalf("DELETE /api/sessions/s2 = %d %s", res.StatusCode, b)
	}
	if d.ID != "s2" || d.Events != int64(len(events)) || d.Shares != 0 || len(d.Subagents) != 0 {
		t.Errorf("DELETE answered %+v", d)
	}
	res, _ = e.do(t, http.MethodDelete, "/api/sessions/s2", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("second DELETE = %d, want 404", res.StatusCode)
	}

	// The page's form: a confirmed delete goes back to the list.
	c := e.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest(http.MethodPost, e.base()+"/sessions/s1/delete", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("POST /sessions/s1/delete = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/sessions/s1", "/api/sessions/s1/events", link} {
		if res, _ := e.get(t, p); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s after delete = %d, want 404", p, res.StatusCode)
		}
	}
	_, list := e.get(t, "/api/sessions")
	if strings.Contains(list, `"s1"`) || strings.Contains(list, `"s2"`) || !strings.Contains(list, `"running"`) {
		t.Errorf("list after deletes: %s", list)
	}

	// Without a Deleter: no button, and the routes say why.
	e2 := newEnv(t, nil)
	e2.session(t, "s", events)
	_, page = e2.get(t, "/sessions/s")
	if doc(t, page).Find(`[data-testid="delete-panel"]`).Length() != 0 {
		t.Error("delete button shown without a Deleter")
	}
	if res, b := e2.do(t, http.MethodDelete, "/api/sessions/s", nil); res.StatusCode != 503 || !strings.Contains(b, "not configured") {
		t.Errorf("DELETE without a Deleter = %d %s", res.StatusCode, b)
	}
	if res, b := e2.do(t, http.MethodPost, "/sessions/s/delete", nil); res.StatusCode != 503 || !strings.Contains(b, "not configured") {
		t.Errorf("POST /sessions/s/delete without a Deleter = %d %s", res.StatusCode, b)
	}
}

// TestDelete_RemovesListRowLive: a list open in another tab loses a deleted
// session's row live (a remove patch of exactly that row); a list filtered
// so that it never showed the session is sent nothing for it.
func TestDelete_RemovesListRowLive(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) {
		d.Deleter = backend.Deleter{Store: d.Sessions.(backend.Source).Store.(backend.Remover)}
		d.Tuning.ListThrottle = 1
	})
	events := demoEvents(t)
	e.session(t, "keep", events)
	e.session(t, "gone", events)
	all := e.stream(t, "/stream")
	if first := all.next(t).Elements(); !strings.Contains(first, `data-session-id="gone"`) {
		t.Fatalf("the list stream's first frame lacks the session: %s", first)
	}
	other := e.stream(t, views.ListFilterStreamURL(views.ListFilter{Query: "keep"}))
	if first := other.next(t).Elements(); strings.Contains(first, `data-session-id="gone"`) {
		t.Fatalf("the filtered list shows the session: %s", first)
	}
	if res, b := e.do(t, http.MethodDelete, "/api/sessions/gone", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d %s", res.StatusCode, b)
	}
	evs := all.until(t, func(ev sseEvent) bool { return ev.field("mode") == "remove" })
	if got, want := evs[len(evs)-1].field("selector"), "#"+views.SessionRowID("gone"); got != want {
		t.Errorf("remove selector %q, want %q", got, want)
	}
	// The filtered list: the next thing it hears of is "keep" changing,
	// not a remove of a row it never had.
	e.append(t, "keep", core.Event{Type: core.EventSessionTitle, Seq: int64(len(events)), Time: t0, Data: []byte(`{"title":"keep it"}`)})
	for _, ev := range other.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "keep it") }) {
		if ev.field("mode") == "remove" {
			t.Errorf("a list that never showed the session got its remove: %v", ev.Data)
		}
	}
}
