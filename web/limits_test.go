package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/approval"
	"prism/core/coretest"
	"prism/web"
	"prism/web/ownerauth"
)

// answer is a request's status and, for an error, its JSON code and text.
type answer struct {
	status int
	code   string
	msg    string
	header http.Header
}

// ask sends one request and reads its answer (status, JSON error code and text).
func (e *env) ask(t testing.TB, method, path, contentType string, body io.Reader, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, e.base()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := *e.client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	if res.StatusCode >= 400 && method != http.MethodHead && strings.HasPrefix(path, "/v1/") {
		// OTLP answers a google.rpc.Status (JSON here): its code as "rpc-N".
		var st struct {
			Code    int
			Message string
		}
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a google.rpc.Status: %v", method, path, res.StatusCode, err)
		}
		a.code, a.msg = fmt.Sprintf("rpc-%d", st.Code), st.Message
		return a
	}
	if res.StatusCode >= 400 && method != http.MethodHead {
		var j struct{ Code, Error string }
		if err := json.NewDecoder(res.Body).Decode(&j); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a JSON error: %v", method, path, res.StatusCode, err)
		}
		a.code, a.msg = j.Code, j.Error
	}
	return a
}

// unsized hides a body's length, so the client sends it chunked.
type unsized struct{ io.Reader }

// fakeApprovals decides approval "a1" of any session (approved) and knows
// no other; it sets the policies "ask" and "never".
type fakeApprovals struct{}

func (fakeApprovals) Pending() []approval.Pending { return nil }

func (fakeApprovals) Decide(_ context.Context, sessionID, approvalID string, d approval.Decision) (approval.Decided, error) {
	if approvalID != "a1" {
		return approval.Decided{}, core.Errorf(core.CodeNotFound, "no approval %s", approvalID)
	}
	out := core.ApprovalRejected
	if d.Approve {
		out = core.ApprovalAllowedOnce
	}
	return approval.Decided{ApprovalDecided: core.ApprovalDecided{ID: approvalID, Outcome: out, By: d.By, Note: d.Note}, SessionID: sessionID}, nil
}

func (fakeApprovals) SetPolicy(_ context.Context, _, policy string) error {
	if policy != "ask" && policy != "never" {
		return core.Errorf(core.CodeInvalid, "policy must be ask or never, got %q", policy)
	}
	return nil
}

// routePattern matches the paths of an Echo route's pattern.
func routePattern(path string) *regexp.Regexp {
	p := regexp.QuoteMeta(regexp.MustCompile(`:[A-Za-z]+|\*`).ReplaceAllString(path, "PARAM"))
	return regexp.MustCompile("^" + strings.ReplaceAll(p, "PARAM", "[^/]+") + "$")
}

// TestBodyLimit_everyPOSTRoute: every form and JSON route refuses a body
// over Tuning.MaxBodyBytes, or its own stricter cap, with 413 and a
// message naming the limit, whether the length is declared or the body is
// chunked; import has its own, larger cap. Every POST route the server
// registers is in the table (checked against Routes()). The server runs
// with an owner token, so that /login reads its form.
func TestBodyLimit_everyPOSTRoute(t *testing.T) {
	const limit = 64 << 10
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Runner, d.Approvals, d.Owner = &fakeRunner{}, fakeApprovals{}, guard
		withNotes(d)
		d.Tuning.MaxBodyBytes = limit
		d.Tuning.MaxImportBytes = 4 * limit
	})
	e.session(t, "s", nil)
	auth := []string{"Authorization", "Bearer " + ownerToken}
	const form, js = "application/x-www-form-urlencoded", "application/json"
	pad := func(n int) string { return strings.Repeat("a", n) }
	routes := []struct {
		path, ct   string
		small, big string
		smallCode  int
		limitText  string
		// unread: the route reads no body, so a chunked one of any size
		// is answered as a small one (a declared oversized length is
		// still refused unread).
		unread bool
	}{
		{path: "/sessions", ct: form, small: "prompt=" + pad(100), big: "prompt=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		{path: "/sessions/s/messages", ct: form, small: "text=" + pad(100), big: "text=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		// Without a Deleter the delete button's route refuses before reading.
		{path: "/sessions/s/delete", ct: form, small: "x=" + pad(100), big: "x=" + pad(limit), smallCode: 503, limitText: "64 KiB", unread: true},
		{path: "/sessions/s/cancel", ct: form, small: "x=" + pad(100), big: "x=" + pad(limit), smallCode: 409, limitText: "64 KiB"},
		{path: "/api/sessions", ct: js, small: `{"prompt":"` + pad(100) + `"}`, big: `{"prompt":"` + pad(limit) + `"}`, smallCode: 201, limitText: "64 KiB"},
		// Import has its own cap: a body over the forms' limit is read
		// (and refused for what it is), one over the import cap is 413.
		{path: "/api/sessions/import?name=x.jsonl", ct: "application/x-ndjson", small: pad(2 * limit), big: pad(4*limit + 1), smallCode: 400, limitText: "256 KiB"},
		{path: "/sessions/s/shares", ct: form, small: "scope=live&label=" + pad(100), big: "scope=live&label=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		{path: "/shares/x/revoke", ct: form, small: "x=" + pad(100), big: "x=" + pad(limit), smallCode: 404, limitText: "64 KiB", unread: true},
		{path: "/api/sessions/s/shares", ct: js, small: `{"label":"` + pad(100) + `"}`, big: `{"label":"` + pad(limit) + `"}`, smallCode: 201, limitText: "64 KiB"},
		{path: "/api/sessions/s/shares/preview", ct: js, small: "{" + strings.Repeat(" ", 100) + "}", big: "{" + strings.Repeat(" ", limit) + "}", smallCode: 200, limitText: "64 KiB"},
		{path: "/login", ct: form, small: "token=" + ownerToken + "&next=/", big: "token=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		{path: "/logout", ct: form, small: "x=" + pad(100), big: "x=" + pad(limit), smallCode: 303, limitText: "64 KiB", unread: true},
		{path: "/sessions/s/approvals/a1", ct: form, small: "decision=approve&note=" + pad(100), big: "decision=approve&note=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		{path: "/api/sessions/s/approvals/a1", ct: js, small: `{"decision":"approve","note":"` + pad(100) + `"}`, big: `{"decision":"approve","note":"` + pad(limit) + `"}`, smallCode: 200, limitText: "64 KiB"},
		{path: "/sessions/s/labels", ct: form, small: "label=x&note=" + pad(100), big: "label=x&note=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		{path: "/sessions/s/labels/n1", ct: form, small: "label=x&note=" + pad(100), big: "label=x&note=" + pad(limit), smallCode: 404, limitText: "64 KiB"},
		{path: "/api/sessions/s/notes", ct: js, small: `{"kind":"label","data":{"label":"x","note":"` + pad(100) + `"}}`, big: `{"kind":"label","data":{"label":"x","note":"` + pad(limit) + `"}}`, smallCode: 201, limitText: "64 KiB"},
		{path: "/api/sessions/s/annotations", ct: js, small: `{"label":"x","note":"` + pad(100) + `"}`, big: `{"label":"x","note":"` + pad(limit) + `"}`, smallCode: 201, limitText: "64 KiB"},
		{path: "/api/attention/n1/ack", ct: form, small: "x=" + pad(100), big: "x=" + pad(limit), smallCode: 404, limitText: "64 KiB", unread: true},
		{path: "/sessions/s/forks", ct: form, small: "atTurn=1&prompt=" + pad(100), big: "atTurn=1&prompt=" + pad(limit), smallCode: 303, limitText: "64 KiB"},
		{path: "/api/sessions/s/forks", ct: js, small: `{"atTurn":1,"prompt":"` + pad(100) + `"}`, big: `{"atTurn":1,"prompt":"` + pad(limit) + `"}`, smallCode: 201, limitText: "64 KiB"},
		// The policy route's own cap is stricter than the server's.
		{path: "/api/sessions/s/approval-policy", ct: js, small: `{"policy":"ask"}`, big: `{"policy":"` + pad(4<<10) + `"}`, smallCode: 200, limitText: "4 KiB"},
	}
	for _, rt := range e.srv.Routes() {
		if rt.Method != http.MethodPost || strings.HasPrefix(rt.Path, "/s/") {
			continue // share links read no body (their 404 page is checked with the statuses)
		}
		if rt.Path == "/v1/traces" {
			continue // its own 16 MiB cap answers in OTLP's encoding: TestOTLP_answers
		}
		found := false
		for _, r := range routes {
			path, _, _ := strings.Cut(r.path, "?")
			found = found || routePattern(rt.Path).MatchString(path)
		}
		if !found {
			t.Errorf("POST %s is not in the body-limit table", rt.Path)
		}
	}
	for _, r := range routes {
		t.Run(r.path, func(t *testing.T) {
			if a := e.ask(t, http.MethodPost, r.path, r.ct, strings.NewReader(r.small), auth...); a.status != r.smallCode {
				t.Errorf("a body within the limit: %d %s %s, want %d", a.status, a.code, a.msg, r.smallCode)
			}
			for _, body := range []io.Reader{strings.NewReader(r.big), unsized{strings.NewReader(r.big)}} {
				a := e.ask(t, http.MethodPost, r.path, r.ct, body, auth...)
				if _, chunked := body.(unsized); chunked && r.unread {
					if a.status != r.smallCode {
						t.Errorf("a chunked body the route does not read: %d %s %s, want %d", a.status, a.code, a.msg, r.smallCode)
					}
					continue
				}
				if a.status != http.StatusRequestEntityTooLarge || a.code != core.CodeTooLarge || !strings.Contains(a.msg, r.limitText) {
					t.Errorf("an oversized body (%T): %d %s %q, want 413 TOO_LARGE naming %s", body, a.status, a.code, a.msg, r.limitText)
				}
			}
		})
	}
	if a := e.ask(t, http.MethodGet, "/healthz", "", nil); a.status != http.StatusOK {
		t.Errorf("healthz after the oversized bodies: %d", a.status)
	}
}

// TestAPIStart_bodyRules: POST /api/sessions reads exactly one JSON object
// of the declared type.
func TestAPIStart_bodyRules(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Runner = &fakeRunner{} })
	for _, tc := range []struct {
		name, ct, body string
		status         int
		code, msg      string
	}{
		{"ok", "application/json; charset=utf-8", `{"prompt":"hi"}` + "\n", 201, "", ""},
		{"trailing data", "application/json", `{"prompt":"hi"} {"prompt":"again"}`, 400, core.CodeInvalid, "data after the JSON object"},
		{"trailing garbage", "application/json", `{"prompt":"hi"}x`, 400, core.CodeInvalid, "data after the JSON object"},
		{"no content type", "", `{"prompt":"hi"}`, 415, core.CodeUnsupportedMediaType, "must be JSON"},
		{"a form", "application/x-www-form-urlencoded", `prompt=hi`, 415, core.CodeUnsupportedMediaType, "must be JSON"},
		{"empty", "application/json", ``, 400, core.CodeInvalid, "the request body is empty"},
		{"unknown field", "application/json", `{"prompt":"hi","shell":"rm"}`, 400, core.CodeInvalid, `unknown field "shell"`},
		{"no prompt", "application/json", `{"model":"scripted"}`, 400, core.CodeInvalid, "prompt is required"},
	} {
		a := e.ask(t, http.MethodPost, "/api/sessions", tc.ct, strings.NewReader(tc.body))
		if a.status != tc.status || a.code != tc.code || !strings.Contains(a.msg, tc.msg) {
			t.Errorf("%s: %d %s %q, want %d %s containing %q", tc.name, a.status, a.code, a.msg, tc.status, tc.code, tc.msg)
		}
	}
}

// TestImport_duplicateSaysUnchanged: importing a stored session again
// writes nothing and says so (200, outcome unchanged), unlike the first
// import (201, created).
func TestImport_duplicateSaysUnchanged(t *testing.T) {
	e := newEnv(t, nil)
	data, err := os.ReadFile(filepath.Join("..", "testdata", "dsh", "basic", "session.jsonl.zstd"))
	if err != nil {
		t.Fatal(err)
	}
	type importAnswer struct {
		status   int
		IDs      []string
		Sessions []web.ImportedSession
		Message  string
	}
	var got []importAnswer
	for range 2 {
		res, err := e.ts.Client().Post(e.ts.URL+"/api/sessions/import?name=s.jsonl.zstd", "application/octet-stream", strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		a := importAnswer{status: res.StatusCode}
		if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		got = append(got, a)
	}
	first, again := got[0], got[1]
	if first.status != 201 || len(first.Sessions) != 1 || first.Sessions[0].Status != web.ImportCreated {
		t.Errorf("first import = %+v", first)
	}
	if again.status != 200 || len(again.Sessions) != 1 || again.Sessions[0].Status != web.ImportUnchanged ||
		again.IDs[0] != first.IDs[0] || !strings.Contains(again.Message, "nothing changed") {
		t.Errorf("the same file again = %+v, want 200, unchanged, saying nothing changed", again)
	}
}

// TestStream_badCursorIs400: a Last-Event-ID or ?after= that is not a seq
// (garbage, overflowing int64, below -1) is refused before the stream
// opens, instead of replaying the session from its start.
func TestStream_badCursorIs400(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "s", demoEvents(t)[:5])
	for _, tc := range []struct{ path, hdr, val string }{
		{"/sessions/s/stream", "Last-Event-ID", "abc"},
		{"/sessions/s/stream", "Last-Event-ID", "99999999999999999999"},
		{"/sessions/s/stream", "Last-Event-ID", "-2"},
		{"/sessions/s/stream?after=x", "", ""},
		{"/sessions/s/stream?after=18446744073709551616", "", ""},
		{"/sessions/s/stream?after=", "", ""},
	} {
		var hdr []string
		if tc.hdr != "" {
			hdr = []string{tc.hdr, tc.val}
		}
		a := e.ask(t, http.MethodGet, tc.path, "", nil, hdr...)
		if a.status != 400 || a.code != core.CodeInvalid || !strings.Contains(a.msg, "must be a seq") {
			t.Errorf("%s %s=%q: %d %s %q, want 400 INVALID", tc.path, tc.hdr, tc.val, a.status, a.code, a.msg)
		}
	}
	// -1 is the start, a valid cursor: the stream replays the log.
	c := e.stream(t, "/sessions/s/stream", "Last-Event-ID", "-1")
	c.until(t, func(ev sseEvent) bool { return ev.ID == "4" })
}

// TestStatusCodes_everyRouteAndMethod: every route answers every method
// with the right status, and every error with the code that status stands
// for; GET routes answer HEAD alike, with no body.
func TestStatusCodes_everyRouteAndMethod(t *testing.T) {
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Runner, d.Approvals = &fakeRunner{}, fakeApprovals{}
		d.Deleter = backend.Deleter{Store: d.Sessions.(backend.Source).Store.(backend.Remover)}
		withNotes(d)
	})
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`).Result("c1", "done", false, nil, nil).StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "s", b.Events)
	e.session(t, "running", b.Events[:3]) // a turn this server runs (fakeRunner owns every session)
	e.session(t, "gone1", b.Events)       // deleted by the table's last rows
	e.session(t, "gone2", b.Events)

	const (
		GET, HEAD, POST, PUT, PATCH, DELETE = "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"
	)
	form := "application/x-www-form-urlencoded"
	type want struct {
		status int
		code   string
	}
	notAllowed := want{405, core.CodeMethodNotAllowed}
	notFound := want{404, core.CodeNotFound}
	routes := []struct {
		path    string
		ct      string
		body    string
		methods map[string]want
	}{
		{"/", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, PUT: notAllowed, PATCH: notAllowed, DELETE: notAllowed}},
		{"/sessions/s", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, PUT: notAllowed, DELETE: notAllowed}},
		{"/sessions/nope", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/sessions/s/stream", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/sessions/nope/stream", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/stream", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/compare/s/s", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/compare/s/nope", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/compare/s/s/stream", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/compare/nope/s/stream", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/compare/s/s/stream?a=x", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/compare?a=s", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/compare?a=s&b=s", "", "", map[string]want{GET: {303, ""}}},
		{"/compare", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/compare?a=nope", "", "", map[string]want{GET: notFound}},
		{"/api/compare/s/s", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/api/compare/s/nope", "", "", map[string]want{GET: notFound}},
		{"/board", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/board/stream", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/rules", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/api/attention", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/api/attention/n1/ack", form, "", map[string]want{POST: notFound, GET: notAllowed}},
		{"/sessions/s/earlier?before=999", "", "", map[string]want{GET: notFound, HEAD: {404, ""}, POST: notAllowed}},
		{"/sessions/s/earlier?before=x", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		// Time travel: the page at an event, jumps, the transport's moves,
		// the window growing later, playback on the stream.
		{"/sessions/s?at=2", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}}},
		{"/sessions/s?at=x", "", "", map[string]want{GET: {400, core.CodeInvalid}, HEAD: {400, ""}}},
		{"/sessions/s?at=99", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/sessions/s?call=c1", "", "", map[string]want{GET: {200, ""}}},
		{"/sessions/s?call=nope", "", "", map[string]want{GET: notFound}},
		{"/sessions/s/later?after=999&until=999", "", "", map[string]want{GET: notFound, HEAD: {404, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/sessions/s/later?after=x&until=1", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/sessions/s/seek?at=2", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, PUT: notAllowed}},
		{"/sessions/s/seek?at=x", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/sessions/nope/seek?at=2", "", "", map[string]want{GET: notFound}},
		{"/sessions/s/stream?after=-1&speed=3", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/sessions/s/stream?after=-1&until=x", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/sessions/s/calls/c1", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, PUT: notAllowed}},
		{"/sessions/s/calls/nope", "", "", map[string]want{GET: notFound}},
		{"/sessions", form, "prompt=hi", map[string]want{POST: {303, ""}, GET: notAllowed, HEAD: {405, ""}, PUT: notAllowed, DELETE: notAllowed}},
		{"/sessions", form, "", map[string]want{POST: {400, core.CodeInvalid}}},
		{"/sessions", "text/plain", "prompt=hi", map[string]want{POST: {415, core.CodeUnsupportedMediaType}}},
		{"/sessions/s/messages", form, "text=more", map[string]want{POST: {303, ""}, GET: notAllowed, PATCH: notAllowed}},
		{"/sessions/s/cancel", "", "", map[string]want{POST: {409, core.CodeConflict}, GET: notAllowed}},
		{"/api/sessions", "application/json", `{"prompt":"hi"}`, map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: {201, ""}, PUT: notAllowed, DELETE: notAllowed}},
		{"/api/sessions?limit=x", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/api/sessions/s/events", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/api/sessions/nope/events", "", "", map[string]want{GET: notFound}},
		{"/api/sessions/import?name=x.jsonl", "application/x-ndjson", "not a log\n", map[string]want{POST: {400, core.CodeInvalid}, GET: notAllowed, PUT: notAllowed}},
		{"/healthz", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, PUT: notAllowed, DELETE: notAllowed}},
		{"/static/highlight.css", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/static/app.css", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, DELETE: notAllowed}},
		{"/static/nope.css", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/nope", "", "", map[string]want{GET: notFound, HEAD: {404, ""}, POST: notFound}},
		{"/sessions/s/export.html", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/sessions/s/calls/c1/content.txt", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, DELETE: notAllowed}},
		{"/sessions/s/calls/c1/arguments.txt", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, DELETE: notAllowed}},
		{"/sessions/s/calls/c1/meta.json", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/sessions/s/calls/nope/arguments.txt", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/sessions/s/calls/nope/meta.json", "", "", map[string]want{GET: notFound}},
		{"/sessions/s/calls/c1/test.zip", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed}},
		{"/sessions/s/calls/nope/test.zip", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/sessions/s/shares", form, "scope=live&redact=1", map[string]want{POST: {303, ""}, GET: notAllowed}},
		{"/sessions/s/shares/preview", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, PUT: notAllowed}},
		{"/shares/x/revoke", form, "", map[string]want{POST: notFound, GET: notAllowed}},
		{"/api/sessions/s/shares", "application/json", "{}", map[string]want{POST: {201, ""}, GET: {200, ""}, HEAD: {200, ""}, PUT: notAllowed}},
		{"/api/sessions/s/shares", "text/plain", "{}", map[string]want{POST: {415, core.CodeUnsupportedMediaType}}},
		{"/api/sessions/s/shares/preview", "application/json", "{}", map[string]want{POST: {200, ""}, GET: notAllowed}},
		{"/api/shares/x", "", "", map[string]want{DELETE: notFound, PUT: notAllowed, GET: notAllowed}},
		{"/api/approvals", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/sessions/s/approvals/a1", form, "decision=approve", map[string]want{POST: {303, ""}, GET: notAllowed, HEAD: {405, ""}, PUT: notAllowed}},
		{"/sessions/s/approvals/a1", form, "decision=maybe", map[string]want{POST: {400, core.CodeInvalid}}},
		{"/sessions/s/approvals/a1", "application/json", `{"decision":"approve"}`, map[string]want{POST: {415, core.CodeUnsupportedMediaType}}},
		{"/sessions/s/approvals/nope", form, "decision=approve", map[string]want{POST: notFound}},
		{"/api/sessions/s/approvals/a1", "application/json", `{"decision":"reject","note":"no"}`, map[string]want{POST: {200, ""}, GET: notAllowed, DELETE: notAllowed}},
		{"/api/sessions/s/approvals/a1", "application/json", `{"decision":"approve"} {}`, map[string]want{POST: {400, core.CodeInvalid}}},
		{"/api/sessions/s/approvals/a1", form, "decision=approve", map[string]want{POST: {415, core.CodeUnsupportedMediaType}}},
		{"/api/sessions/s/approvals/nope", "application/json", `{"decision":"approve"}`, map[string]want{POST: notFound}},
		{"/api/sessions/s/approval-policy", "application/json", `{"policy":"never"}`, map[string]want{POST: {200, ""}, GET: notAllowed, PUT: notAllowed}},
		{"/api/sessions/s/approval-policy", "application/json", `{"policy":"sometimes"}`, map[string]want{POST: {400, core.CodeInvalid}}},
		{"/api/sessions/s/approval-policy", "application/json", ``, map[string]want{POST: {400, core.CodeInvalid}}},
		{"/search", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/sources", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, DELETE: notAllowed}},
		{"/search?q=tool:read", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}}},
		{"/api/search?q=tool:read", "", "", map[string]want{GET: {200, ""}, HEAD: {200, ""}, POST: notAllowed, PUT: notAllowed}},
		{"/api/search", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/api/search?q=%22open", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/api/search?q=x&limit=0", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/api/sessions/nope", "", "", map[string]want{DELETE: notFound, GET: notAllowed, PUT: notAllowed}},
		{"/api/sessions/running", "", "", map[string]want{DELETE: {409, core.CodeConflict}}},
		{"/sessions/nope/delete", form, "", map[string]want{POST: notFound, GET: notAllowed}},
		{"/sessions/running/delete", form, "", map[string]want{POST: {409, core.CodeConflict}}},
		{"/api/sessions/gone1", "", "", map[string]want{DELETE: {200, ""}}},
		{"/sessions/gone2/delete", form, "", map[string]want{POST: {303, ""}}},
		// Notes beside the log: clients write labels only.
		{"/sessions/s/labels", form, "callId=c1&label=wrong&score=1", map[string]want{POST: {303, ""}, GET: notAllowed}},
		{"/sessions/s/labels", form, "callId=nope&label=wrong", map[string]want{POST: notFound}},
		{"/sessions/s/labels/n1?remove=1", form, "", map[string]want{POST: notFound, GET: notAllowed}},
		{"/api/sessions/s/notes", "application/json", `{"kind":"label","callId":"c1","data":{"label":"wrong"}}`, map[string]want{POST: {201, ""}, GET: {200, ""}, HEAD: {200, ""}, PUT: notAllowed, DELETE: notAllowed}},
		{"/api/sessions/s/notes?kind=mood", "", "", map[string]want{GET: {400, core.CodeInvalid}}},
		{"/api/sessions/s/notes", "application/json", `{"kind":"mood","data":{}}`, map[string]want{POST: {400, core.CodeInvalid}}},
		{"/api/sessions/s/notes", "application/json", `{"kind":"link","data":{}}`, map[string]want{POST: {403, core.CodeForbidden}}},
		{"/api/sessions/s/notes", "application/json", `{"kind":"label","callId":"nope","data":{"label":"x"}}`, map[string]want{POST: notFound}},
		{"/api/sessions/nope/notes", "", "", map[string]want{GET: notFound}},
		{"/api/sessions/s/notes/n1", "application/json", `{"kind":"label","data":{"label":"x"}}`, map[string]want{PUT: notFound, DELETE: notFound, GET: notAllowed, POST: notAllowed}},
		{"/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"slow"}`, map[string]want{POST: {201, ""}, GET: notAllowed, DELETE: notAllowed}},
		{"/api/sessions/s/annotations/n1", "application/json", `{"label":"x"}`, map[string]want{PUT: notFound, DELETE: notFound, POST: notAllowed, GET: notAllowed}},
		// Forks (fakeRunner's ForkSession: web/fork_test.go).
		{"/sessions/s/forks", form, "atTurn=1", map[string]want{POST: {303, ""}, GET: {200, ""}, HEAD: {200, ""}, PUT: notAllowed, DELETE: notAllowed}},
		{"/sessions/nope/forks", "", "", map[string]want{GET: notFound, HEAD: {404, ""}}},
		{"/sessions/s/forks", form, "atTurn=one", map[string]want{POST: {400, core.CodeInvalidBoundary}}},
		{"/api/sessions/s/forks", "application/json", `{"atTurn":1}`, map[string]want{POST: {201, ""}, GET: notAllowed, PUT: notAllowed}},
		{"/api/sessions/nope/forks", "application/json", `{"atTurn":1}`, map[string]want{POST: {404, core.CodeSessionNotFound}}},
		{"/api/sessions/s/forks", form, "atTurn=1", map[string]want{POST: {415, core.CodeUnsupportedMediaType}}},
		// Without an owner token there is no one to sign in.
		{"/login", form, "token=x", map[string]want{GET: {303, ""}, HEAD: {303, ""}, POST: {303, ""}, PUT: notAllowed}},
		{"/logout", form, "", map[string]want{POST: {303, ""}, GET: notAllowed}},
		// Without a TraceReceiver the OTLP receiver answers 503 (in
		// OTLP's encoding: TestOTLP_answers checks its bodies).
		{"/v1/traces", "application/json", "{}", map[string]want{POST: {503, "rpc-14"}}},
		{"/v1/traces", "text/plain", "{}", map[string]want{POST: {415, "rpc-3"}}},
	}
	// Share links answer one 404 page to whatever is not a valid read
	// (an HTML page, the same for every client, by design).
	for _, m := range []string{GET, HEAD, POST, DELETE} {
		if a := e.doRaw(t, m, "/s/AAAAAAAAAAAAAAAAAAAAAA"); a != http.StatusNotFound {
			t.Errorf("%s /s/TOKEN = %d, want 404", m, a)
		}
	}
	// Every route the server registers is in the table, with its method.
	for _, rt := range e.srv.Routes() {
		if strings.HasPrefix(rt.Path, "/s/") {
			continue
		}
		pat := routePattern(rt.Path)
		found := false
		for _, r := range routes {
			path, _, _ := strings.Cut(r.path, "?")
			if _, ok := r.methods[rt.Method]; ok && pat.MatchString(path) {
				found = true
			}
		}
		if !found {
			t.Errorf("route %s %s is not in the table", rt.Method, rt.Path)
		}
	}
	for _, r := range routes {
		for method, w := range r.methods {
			var body io.Reader
			ct := ""
			if method == POST || method == PUT || method == PATCH {
				body, ct = strings.NewReader(r.body), r.ct
			}
			var a answer
			if method == GET && strings.HasSuffix(r.path, "/stream") && w.status == 200 {
				a.status = e.stream(t, r.path).res.StatusCode // a stream does not end by itself
			} else {
				a = e.ask(t, method, r.path, ct, body)
			}
			if a.status != w.status || a.code != w.code {
				t.Errorf("%s %s = %d %s (%s), want %d %s", method, r.path, a.status, a.code, a.msg, w.status, w.code)
			}
			if a.status == 405 && (a.header.Get("Allow") == "" || method != HEAD && !strings.Contains(a.msg, "answers")) {
				t.Errorf("%s %s: a 405 without Allow or a message naming the methods: %q %q", method, r.path, a.header.Get("Allow"), a.msg)
			}
		}
	}
	// Refusals before any route: a foreign Host, a cross-site POST.
	if a := e.ask(t, GET, "/", "", nil, "Host", "evil.example"); a.status != 403 || a.code != core.CodeForbidden {
		t.Errorf("foreign Host = %d %s, want 403 FORBIDDEN", a.status, a.code)
	}
	if a := e.ask(t, POST, "/sessions", form, strings.NewReader("prompt=hi"), "Origin", "https://evil.example"); a.status != 403 || a.code != core.CodeForbidden {
		t.Errorf("cross-origin POST = %d %s, want 403 FORBIDDEN", a.status, a.code)
	}
}

// doRaw sends a request without body or Accept and returns its status.
func (e *env) doRaw(t testing.TB, method, path string) int {
	t.Helper()
	req, _ := http.NewRequest(method, e.base()+path, nil)
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// rawConn opens a TCP connection to the server and writes raw.
func (e *env) rawConn(t testing.TB, raw string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestSlowBody_timesOut: clients that send headers and then stall their
// bodies get 408 (code TIMEOUT) once Tuning.BodyTimeout passes, and their
// connections are closed, while the server keeps answering others.
func TestSlowBody_timesOut(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) {
		d.Runner = &fakeRunner{}
		d.Tuning.BodyTimeout = 300 * time.Millisecond
	})
	heads := []string{
		"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pro",
		"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nprompt=",
		"POST /api/sessions/import?name=x.jsonl HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"type\":\"sessio\r\n",
	}
	var wg sync.WaitGroup
	for i := range 30 {
		raw := heads[i%len(heads)]
		conn := e.rawConn(t, raw)
		wg.Go(func() {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a failure bound, not a clock
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Errorf("%.40q: no answer to a stalled body: %v", raw, err)
				return
			}
			var j struct{ Code, Error string }
			_ = json.NewDecoder(res.Body).Decode(&j)
			res.Body.Close()
			// Never 503 for an import: a stalled upload holds no import slot.
			if res.StatusCode != http.StatusRequestTimeout || j.Code != core.CodeTimeout {
				t.Errorf("%.40q: %d %s %q, want 408 TIMEOUT", raw, res.StatusCode, j.Code, j.Error)
			}
			if _, err := br.ReadByte(); err == nil {
				t.Errorf("%.40q: the connection stays open after the 408", raw)
			}
		})
	}
	if a := e.ask(t, http.MethodGet, "/healthz", "", nil); a.status != http.StatusOK {
		t.Errorf("healthz while bodies stall: %d", a.status)
	}
	wg.Wait()
}

// TestSlowHeaders_closed: a client that never finishes its headers is
// disconnected after Tuning.HeaderTimeout by a server run with Serve.
func TestSlowHeaders_closed(t *testing.T) {
	st, _ := openStore(t)
	srv := web.New(web.Deps{Sessions: backend.Source{Store: st}, Presenter: presenters(t), Tuning: web.Tuning{HeaderTimeout: 200 * time.Millisecond}})
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	e := &env{url: "http://" + ln.Addr().String(), hc: http.DefaultClient}
	conn := e.rawConn(t, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a failure bound, not a clock
	if n, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the half-sent request was not closed by the server: read %d bytes, %v", n, err)
	}
	if a := e.ask(t, http.MethodGet, "/healthz", "", nil); a.status != http.StatusOK {
		t.Errorf("healthz: %d", a.status)
	}
}

// signalHandler is a slog handler that reports records with one message.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// TestStalledReader_streamClosed: a client that opens a session's stream
// and stops reading has the stream closed once its buffers are full and a
// write waits past Tuning.WriteTimeout — its goroutine and queue are freed
// — while the server goes on answering and streaming to others.
func TestStalledReader_streamClosed(t *testing.T) {
	ended := make(chan struct{}, 1)
	e := newEnv(t, func(d *web.Deps) {
		d.Tuning.WriteTimeout = 200 * time.Millisecond
		d.Logger = slog.New(signalHandler{msg: web.StreamWriteFailed, ch: ended})
	})
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	e.session(t, "s", b.Events)
	// A small receive buffer, so the stall shows in kilobytes rather than
	// in the tens of megabytes loopback buffers grow to.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /sessions/s/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", res, err)
	}
	// The client reads no more. Long user messages fill the socket buffers.
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", 1<<10)
	for i := 0; ; i++ {
		b.User(text)
		e.append(t, "s", b.Events[len(b.Events)-1])
		select {
		case <-ended:
		default:
			if i < 5000 {
				continue
			}
			t.Fatal("the stream of a client that stopped reading was never closed")
		}
		t.Logf("closed after %d messages", i+1)
		break
	}
	if a := e.ask(t, http.MethodGet, "/healthz", "", nil); a.status != http.StatusOK {
		t.Errorf("healthz after the stalled stream: %d", a.status)
	}
	// Another reader of the session still follows it live.
	last := b.Events[len(b.Events)-1].Seq
	other := e.stream(t, fmt.Sprintf("/sessions/s/stream?after=%d", last))
	b.User("one more")
	e.append(t, "s", b.Events[len(b.Events)-1])
	want := fmt.Sprint(last + 1)
	deadline := time.After(60 * time.Second) // a failure bound: the hub may still be rendering the stall's backlog
	for done := false; !done; {
		select {
		case ev, ok := <-other.events:
			if !ok {
				t.Fatal("the other stream ended")
			}
			done = ev.ID == want
		case <-deadline:
			t.Fatal("another reader of the session no longer follows it")
		}
	}
}

// TestStreamsPerClient_capped: with Tuning.MaxStreamsPerClient set, one
// address may hold that many streams; the next is answered 429 with the
// reason. Unset (the default), there is no cap.
func TestStreamsPerClient_capped(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.MaxStreamsPerClient = 2 })
	e.session(t, "s", nil)
	for range 2 {
		c := e.stream(t, "/stream")
		if c.res.StatusCode != 200 {
			t.Fatalf("a stream within the cap: %d", c.res.StatusCode)
		}
	}
	a := e.ask(t, http.MethodGet, "/sessions/s/stream", "", nil)
	if a.status != http.StatusTooManyRequests || a.code != core.CodeTooManyRequests || !strings.Contains(a.msg, "2 live streams open") {
		t.Errorf("a third stream = %d %s %q, want 429 TOO_MANY_REQUESTS naming the limit", a.status, a.code, a.msg)
	}
	open := newEnv(t, nil)
	open.session(t, "s", nil)
	for range 20 {
		if c := open.stream(t, "/sessions/s/stream"); c.res.StatusCode != 200 {
			t.Fatalf("without a cap, a stream was refused: %d", c.res.StatusCode)
		}
	}
}
