package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/core/redact"
	"prism/web"
)

// testClock is the server's injectable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// shareEnv is an env with share links enabled, on a controllable clock.
func shareEnv(t testing.TB, more func(*web.Deps)) (*env, *testClock) {
	t.Helper()
	clk := &testClock{t: time.Now()}
	e := newEnv(t, func(d *web.Deps) {
		r, err := redact.New()
		if err != nil {
			t.Fatal(err)
		}
		d.Shares = d.Sessions.(backend.Source).Store.(web.ShareStore)
		d.Redactor, d.Now = r, clk.Now
		d.Tuning.ShareCheck = 50 * time.Millisecond
		if more != nil {
			more(d)
		}
	})
	return e, clk
}

// apiJSON sends a JSON request and decodes the JSON answer into out.
func (e *env) apiJSON(t testing.TB, method, path, body string, out any, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, e.base()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && len(b) > 0 && res.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return res
}

type created struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	ExpiresAt int64  `json:"expiresAt"`
	UpToSeq   *int64 `json:"upToSeq"`
	Redact    bool   `json:"redact"`
}

// share makes a link to session id with body and returns it and its path.
func (e *env) share(t testing.TB, id, body string, hdr ...string) (created, string) {
	t.Helper()
	var c created
	res := e.apiJSON(t, http.MethodPost, "/api/sessions/"+url.PathEscape(id)+"/shares", body, &c, hdr...)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create share %s: status %d", body, res.StatusCode)
	}
	u, err := url.Parse(c.URL)
	if err != nil || !u.IsAbs() || !strings.HasPrefix(u.Path, "/s/") {
		t.Fatalf("share url %q is not an absolute /s/ URL", c.URL)
	}
	return c, u.Path
}

// raw sends a request and returns the status and body.
func (e *env) raw(t testing.TB, method, path string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.base()+path, nil)
	req.Header.Set("Accept", "text/html")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// twoCallSession is a small scripted session: two calls in two steps.
func twoCallSession() []core.Event {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("List the files, then read one.")
	b.Assistant("Listing.", [3]string{"call-a", "note", `{"title":"first"}`})
	b.Call("call-a", "note", `{"title":"first"}`)
	b.Result("call-a", "noted first", false, nil, nil)
	b.StepEnd().StepStart()
	b.Assistant("Reading.", [3]string{"call-b", "note", `{"title":"second"}`})
	b.Call("call-b", "note", `{"title":"second"}`)
	b.Result("call-b", "noted second", false, nil, nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

func seqOfCall(events []core.Event, typ, callID string) int64 {
	for _, e := range events {
		if e.Type == typ && strings.Contains(string(e.Data), `"`+callID+`"`) {
			return e.Seq
		}
	}
	panic("no " + typ + " for " + callID)
}

// TestShareTokenTable: every request under /s/ that is not a valid,
// in-scope read is the same 404 page, byte for byte.
func TestShareTokenTable(t *testing.T) {
	e, clk := shareEnv(t, nil)
	events := twoCallSession()
	e.session(t, "s1", events)
	other := "call-z"
	e.session(t, "s2", coretest.NewBuilder(t0).TurnStart().StepStart().Call(other, "note", `{"title":"z"}`).Events)

	scope := seqOfCall(events, core.EventToolResult, "call-a")
	_, valid := e.share(t, "s1", "{}")
	_, scoped := e.share(t, "s1", fmt.Sprintf(`{"upToSeq":%d}`, scope))
	_, expiring := e.share(t, "s1", fmt.Sprintf(`{"expiresAt":%d}`, clk.Now().Add(time.Hour).UnixMilli()))
	revokedC, revoked := e.share(t, "s1", "{}")
	if res := e.apiJSON(t, http.MethodDelete, "/api/shares/"+revokedC.ID, "", nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	clk.advance(2 * time.Hour) // expiring has expired

	_, ok := e.raw(t, http.MethodGet, valid)
	if !strings.Contains(ok, `data-testid="session-page"`) {
		t.Fatalf("a valid link does not show the session")
	}
	var notFound string
	for _, tc := range []struct {
		name, method, path string
		hdr                []string
	}{
		{"unknown token", "GET", "/s/AAAAAAAAAAAAAAAAAAAAAA", nil},
		{"malformed token", "GET", "/s/not-a-token", nil},
		{"malformed, long", "GET", "/s/" + strings.Repeat("A", 300), nil},
		{"expired", "GET", expiring, nil},
		{"revoked", "GET", revoked, nil},
		{"revoked stream", "GET", revoked + "/stream", nil},
		{"out-of-scope call", "GET", scoped + "/calls/call-b", nil},
		{"out-of-scope content", "GET", scoped + "/calls/call-b/content.txt", nil},
		{"scoped link has no stream", "GET", scoped + "/stream", nil},
		{"another session's call", "GET", valid + "/calls/" + other, nil},
		{"unknown card", "GET", valid + "/calls/call-a?card=nope", nil},
		{"unknown sub-path", "GET", valid + "/sessions", nil},
		{"deeper path", "GET", valid + "/calls/call-a/content.txt/x", nil},
		{"earlier without a seq", "GET", valid + "/earlier", nil},
		{"POST on the page", "POST", valid, nil},
		{"cross-site POST", "POST", valid, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		{"POST on the stream", "POST", valid + "/stream", nil},
		{"PUT", "PUT", valid + "/events", nil},
		{"DELETE", "DELETE", valid, nil},
		{"empty", "GET", "/s/", nil},
		{"dot segments", "GET", "/s/%2e%2e/sessions", nil},
	} {
		status, body := e.raw(t, tc.method, tc.path, tc.hdr...)
		if status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", tc.name, status)
			continue
		}
		if notFound == "" {
			notFound = body
			if !strings.Contains(body, `data-testid="share-not-found"`) {
				t.Fatalf("404 page: %s", body)
			}
		}
		if body != notFound {
			t.Errorf("%s: 404 body differs:\n%s", tc.name, cmp.Diff(notFound, body))
		}
	}
	// Valid reads within scope answer.
	for _, p := range []string{valid + "/events", valid + "/export.html", valid + "/calls/call-b", valid + "/calls/call-b/content.txt",
		scoped + "/calls/call-a", scoped + "/calls/call-a/content.txt", scoped + "/events"} {
		if status, _ := e.raw(t, http.MethodGet, p); status != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", p, status)
		}
	}
}

// TestShareAPI: create, list (never a token), revoke; bad input named.
func TestShareAPI(t *testing.T) {
	e, clk := shareEnv(t, nil)
	e.session(t, "s1", twoCallSession())
	c, path := e.share(t, "s1", "{}")
	if !c.Redact || c.UpToSeq != nil || c.ExpiresAt != 0 {
		t.Errorf("{} made %+v; want the whole session, live, redacted, no expiry", c)
	}
	if !strings.HasPrefix(c.URL, e.base()+"/s/") {
		t.Errorf("url %q does not start with the request's scheme and host", c.URL)
	}
	token := strings.TrimPrefix(path, "/s/")
	exp := clk.Now().Add(time.Hour).UnixMilli()
	c2, _ := e.share(t, "s1", fmt.Sprintf(`{"label":"review","expiresAt":%d,"upToSeq":3,"redact":false}`, exp))
	if c2.Redact || c2.UpToSeq == nil || *c2.UpToSeq != 3 || c2.ExpiresAt != exp {
		t.Errorf("created %+v", c2)
	}
	var list struct {
		Shares []map[string]any `json:"shares"`
	}
	res := e.apiJSON(t, http.MethodGet, "/api/sessions/s1/shares", "", &list)
	if res.StatusCode != 200 || len(list.Shares) != 2 || list.Shares[1]["label"] != "review" {
		t.Fatalf("list: %d %+v", res.StatusCode, list)
	}
	b, _ := json.Marshal(list)
	if strings.Contains(string(b), token) {
		t.Error("the list reveals a token")
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"POST", "/api/sessions/nope/shares", "{}", 404, "nope"},
		{"POST", "/api/sessions/s1/shares", `{"upToSeq":999}`, 400, "past the session's last event"},
		{"POST", "/api/sessions/s1/shares", `{"expiresAt":5}`, 400, "not in the future"},
		{"POST", "/api/sessions/s1/shares", `{"labl":"x"}`, 400, "unknown field"},
		{"POST", "/api/sessions/s1/shares", `{} {}`, 400, "data after the JSON object"},
		{"POST", "/api/sessions/s1/shares", `[`, 400, "request body"},
		{"GET", "/api/sessions/nope/shares", "", 404, "nope"},
		{"DELETE", "/api/shares/nope", "", 404, "nope"},
		{"POST", "/api/sessions/s1/shares", `{"label":"x"}`, 415, "must be JSON"}, // no Content-Type
	} {
		req, _ := http.NewRequest(tc.method, e.base()+tc.path, strings.NewReader(tc.body))
		if tc.body != "" && tc.status != 415 {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s %s %s: %d %s; want %d with %q", tc.method, tc.path, tc.body, res.StatusCode, body, tc.status, tc.msg)
		}
	}
	// Revoking twice is fine; the link is then dead.
	for range 2 {
		if res := e.apiJSON(t, http.MethodDelete, "/api/shares/"+c.ID, "", nil); res.StatusCode != http.StatusNoContent {
			t.Errorf("revoke: %d", res.StatusCode)
		}
	}
	if status, _ := e.raw(t, "GET", path); status != 404 {
		t.Errorf("revoked link: %d", status)
	}
}

// TestShareAudit: each view of the page counts and stamps the link; the
// session page lists it (views, last viewed) with a revoke button.
func TestShareAudit(t *testing.T) {
	e, _ := shareEnv(t, nil)
	e.session(t, "s1", twoCallSession())
	c, path := e.share(t, "s1", `{"label":"audit me"}`)
	for range 3 {
		e.raw(t, "GET", path)
	}
	e.raw(t, "GET", path+"/events") // exports are not page views
	sh, err := e.store.Share(context.Background(), c.ID)
	if err != nil || sh.Views != 3 || sh.LastViewedAt == 0 {
		t.Fatalf("after 3 views: %+v %v", sh, err)
	}
	_, page := e.get(t, "/sessions/s1")
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	row := doc.Find(`[data-testid="share-row"][data-share-id="` + c.ID + `"]`)
	if row.Length() != 1 || row.Find(`[data-testid="share-views"]`).Text() != "3" || row.Find(`[data-testid="share-revoke"]`).Length() != 1 {
		t.Errorf("share row: %q", row.Text())
	}
	if strings.Contains(page, strings.TrimPrefix(path, "/s/")) {
		t.Error("the session page shows a link's token")
	}
}

// TestShareRevokeEndsStream: an open stream of a live link ends within a
// second of its revocation, through the API or from elsewhere (the
// store), and of its expiry.
func TestShareRevokeEndsStream(t *testing.T) {
	for _, how := range []string{"api", "store", "expiry"} {
		t.Run(how, func(t *testing.T) {
			e, clk := shareEnv(t, nil)
			e.session(t, "s1", twoCallSession())
			c, path := e.share(t, "s1", fmt.Sprintf(`{"expiresAt":%d}`, clk.Now().Add(time.Hour).UnixMilli()))
			st := e.stream(t, path+"/stream?after=-1")
			st.next(t) // the catch-up
			start := time.Now()
			switch how {
			case "api":
				e.apiJSON(t, http.MethodDelete, "/api/shares/"+c.ID, "", nil)
			case "store":
				if _, err := e.store.RevokeShare(context.Background(), c.ID); err != nil {
					t.Fatal(err)
				}
			case "expiry":
				clk.advance(2 * time.Hour)
			}
			var last sseEvent
			for ev := range st.events {
				last = ev
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("stream ended %v after the link stopped", took)
			}
			if !strings.Contains(last.Elements(), "revoked or has expired") {
				t.Errorf("last event: %q", last.Elements())
			}
		})
	}
}

// TestShareScoped: a link scoped at N shows the session exactly as it was
// after event N — card by card what the owner's page showed then — and no
// later event anywhere.
func TestShareScoped(t *testing.T) {
	e, _ := shareEnv(t, nil)
	events := demoEvents(t)
	e.session(t, "demo", events)
	// Scope at tool/call events (the call is pending on the link, its
	// result comes later): the first, a middle and the last but one call.
	var calls []int64
	for _, ev := range events {
		if ev.Type == core.EventToolCall {
			calls = append(calls, ev.Seq)
		}
	}
	pending, laterIDs := 0, 0
	for _, n := range []int64{calls[0], calls[len(calls)/2], calls[len(calls)-2]} {
		// The owner's page of a session that had exactly n+1 events.
		past := fmt.Sprintf("past-%d", n)
		e.session(t, past, events[:n+1])
		_, want := e.get(t, "/sessions/"+past)
		_, path := e.share(t, "demo", fmt.Sprintf(`{"upToSeq":%d,"redact":false}`, n))
		_, got := e.get(t, path)
		if diff := cmp.Diff(cardStates(t, want), cardStates(t, got)); diff != "" {
			t.Errorf("link at %d (-owner's page then +link):\n%s", n, diff)
		}
		pending += strings.Count(got, `data-state="pending"`)
		// Nothing later: no call id that the log first names after n, in
		// any read.
		var before strings.Builder
		for _, ev := range events[:n+1] {
			before.Write(ev.Data)
		}
		later := map[string]bool{}
		for _, ev := range events[n+1:] {
			if id := callIDOf(ev); id != "" && !strings.Contains(before.String(), id) {
				later[id] = true
			}
		}
		laterIDs += len(later)
		reads := []string{path, path + "/events", path + "/export.html"}
		for _, r := range reads {
			_, body := e.get(t, r)
			for id := range later {
				if strings.Contains(body, id) {
					t.Errorf("link at %d: %s shows later call %s", n, r, id)
				}
			}
			if r == path+"/events" {
				lines := strings.Split(strings.TrimSpace(body), "\n")
				if int64(len(lines)) != n+2 { // header + events 0..n
					t.Errorf("link at %d: events export has %d lines, want %d", n, len(lines), n+2)
				}
			}
		}
		for id := range later {
			if status, _ := e.raw(t, "GET", path+"/calls/"+url.PathEscape(id)); status != 404 {
				t.Errorf("link at %d: later call %s answers %d", n, id, status)
			}
		}
		// Counts are the scoped ones.
		doc, _ := goquery.NewDocumentFromReader(strings.NewReader(got))
		wantDoc, _ := goquery.NewDocumentFromReader(strings.NewReader(want))
		for _, stat := range []string{"stat-calls", "stat-errors", "stat-turns", "stat-pending"} {
			if g, w := doc.Find(`[data-testid="`+stat+`"]`).Text(), wantDoc.Find(`[data-testid="`+stat+`"]`).Text(); g != w {
				t.Errorf("link at %d: %s %q, want %q", n, stat, g, w)
			}
		}
	}
	if laterIDs == 0 {
		t.Error("no call was named only after a link's scope: the test checks nothing")
	}
	if pending == 0 {
		t.Error("no link showed a pending call (the scope should cut between a call and its result)")
	}
}

func callIDOf(e core.Event) string {
	var d struct {
		CallID  string `json:"callId"`
		Message struct {
			Source struct {
				CallID string `json:"callId"`
			} `json:"source"`
		} `json:"message"`
	}
	_ = json.Unmarshal(e.Data, &d)
	if d.CallID != "" {
		return d.CallID
	}
	return d.Message.Source.CallID
}

// cardStates lists a page's cards: id, call id, state.
func cardStates(t testing.TB, html string) []string {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	doc.Find(`[data-testid="tool-card"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("id")
		call, _ := s.Attr("data-call-id")
		state, _ := s.Attr("data-state")
		out = append(out, id+" "+call+" "+state)
	})
	return out
}

// secrets seeds one of each kind of secret into every place a link shows.
func secretEvents() ([]core.Event, []string) {
	aws := "AKIA" + "IOSFODNN7EXAMPLE"
	gh := "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"
	ds := "sk-" + "0123456789abcdef0123456789abcdef"
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pk := "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq8m9Yr\n-----END RSA " + "PRIVATE KEY-----"
	bearer := "abcdef0123456789abcdef0123456789"
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("Deploy with password=hunter2-secret and " + ds)
	b.Chunks("Using "+gh[:12], gh[12:]+" now.")
	b.Assistant("Using "+gh+" now.", [3]string{"c-env", "note", `{"title":"export AWS_KEY=` + aws + `"}`})
	b.Call("c-env", "note", `{"title":"export AWS_KEY=`+aws+`"}`)
	b.Result("c-env", "got "+jwt, false, map[string]any{"headers": map[string]string{"Authorization": "Bearer " + bearer}, "key": pk}, nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events, []string{aws, gh, gh[12:], ds, jwt, "MIIEowIBAAKCAQEA7bq8m9Yr", bearer, "hunter2-secret"}
}

// TestShareRedaction: no secret byte leaves through any read of a
// redacted link — page, stream frames, projections, exports — the preview
// counts what is hidden, and the stored log keeps the originals.
func TestShareRedaction(t *testing.T) {
	e, _ := shareEnv(t, nil)
	events, secrets := secretEvents()
	e.session(t, "s1", events[:3]) // the rest arrives while a stream is open
	_, path := e.share(t, "s1", "{}")
	st := e.stream(t, path+"/stream?after=-1")
	var frames strings.Builder
	for _, ev := range st.until(t, func(ev sseEvent) bool { return ev.ID == "2" }) {
		frames.WriteString(ev.Elements())
	}
	e.append(t, "s1", events[3:]...)
	last := strconv.Itoa(len(events) - 1)
	for _, ev := range st.until(t, func(ev sseEvent) bool { return ev.ID == last }) {
		frames.WriteString(ev.Elements())
	}
	reads := map[string]string{"stream frames": frames.String()}
	for _, p := range []string{path, path + "/events", path + "/export.html", path + "/calls/c-env", path + "/calls/c-env/content.txt"} {
		status, body := e.raw(t, "GET", p)
		if status != 200 {
			t.Fatalf("GET %s: %d", p, status)
		}
		reads[p] = body
	}
	for name, body := range reads {
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s leaks %q", name, s)
			}
		}
		if !strings.Contains(body, "[redacted:") {
			t.Errorf("%s shows no redaction marker", name)
		}
	}
	// The preview counts the hits per kind, with where they are.
	var rep redact.Report
	res := e.apiJSON(t, http.MethodPost, "/api/sessions/s1/shares/preview", "{}", &rep)
	if res.StatusCode != 200 {
		t.Fatalf("preview: %d", res.StatusCode)
	}
	r, _ := redact.New()
	sl, err := e.store.LoadSession(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	h, stored := sl.Info.Header, sl.Events
	_, _, want := r.Session(h, stored)
	if diff := cmp.Diff(want, rep); diff != "" || rep.Total < 7 {
		t.Errorf("preview (-walker +api), total %d:\n%s", rep.Total, diff)
	}
	kinds := map[string]bool{}
	for _, k := range rep.Kinds {
		kinds[k.Kind] = true
	}
	for _, k := range []string{"aws-access-key", "github-token", "deepseek-key", "jwt", "private-key", "password", "authorization"} {
		if !kinds[k] {
			t.Errorf("preview misses kind %s: %+v", k, rep.Kinds)
		}
	}
	// The stored log still has every original.
	var all bytes.Buffer
	for _, ev := range stored {
		all.Write(ev.Data)
	}
	for _, s := range secrets[:1] {
		if !bytes.Contains(all.Bytes(), []byte(s)) {
			t.Errorf("the stored log lost %q", s)
		}
	}
	// An unredacted link shows them (the owner chose so).
	_, plain := e.share(t, "s1", `{"redact":false}`)
	if _, body := e.raw(t, "GET", plain+"/events"); !strings.Contains(body, secrets[0]) {
		t.Error("an unredacted link hides what it should show")
	}
}

// TestShareListener: the share listener answers share links and static
// files and nothing else.
func TestShareListener(t *testing.T) {
	e, _ := shareEnv(t, nil)
	e.session(t, "s1", twoCallSession())
	_, path := e.share(t, "s1", "{}")
	ts := httptest.NewServer(e.srv.ShareHandler())
	t.Cleanup(ts.Close)
	get := func(method, p string) (int, string) {
		req, _ := http.NewRequest(method, ts.URL+p, nil)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := get("GET", path); status != 200 || !strings.Contains(body, "session-page") {
		t.Fatalf("share page on the share listener: %d", status)
	}
	if status, _ := get("GET", "/static/app.css"); status != 200 {
		t.Errorf("static: %d", status)
	}
	_, notFound := get("GET", "/s/AAAAAAAAAAAAAAAAAAAAAA")
	for _, p := range []string{"/", "/sessions/s1", "/api/sessions", "/api/sessions/s1/events", "/api/sessions/s1/shares",
		"/stream", "/healthz", "/login", "/sessions/s1/export.html", "/static/../sessions"} {
		for _, m := range []string{"GET", "POST", "DELETE"} {
			status, body := get(m, p)
			if status != 404 || body != notFound {
				t.Errorf("%s %s on the share listener: %d", m, p, status)
			}
		}
	}
}

// TestExportHTML: the export is one self-contained file — the page's
// stylesheets inline, no script, no link to a server — with its own CSP,
// for the owner and through a link alike.
func TestExportHTML(t *testing.T) {
	e, _ := shareEnv(t, nil)
	e.session(t, "s1", demoEvents(t))
	_, path := e.share(t, "s1", "{}")
	for _, p := range []string{"/sessions/s1/export.html", path + "/export.html"} {
		res, body := e.get(t, p)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", p, res.StatusCode)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "style-src 'unsafe-inline'") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if css := doc.Find("head style").Text(); !strings.Contains(css, ".session-head {") || !strings.Contains(css, ".chroma") {
			t.Errorf("%s: the stylesheets are not inline (%d bytes of style)", p, len(css))
		}
		if doc.Find("script, link[rel=stylesheet], [data-init], [data-on\\:click]").Length() != 0 || strings.Contains(body, "<script") {
			t.Errorf("%s: the export has script or external resources", p)
		}
		doc.Find("[href], [src]").Each(func(_ int, s *goquery.Selection) {
			for _, a := range []string{"href", "src"} {
				if v, ok := s.Attr(a); ok && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "#") {
					t.Errorf("%s: a link to the server: %s=%q", p, a, v)
				}
			}
		})
		if n := doc.Find(`[data-testid="tool-card"]`).Length(); n == 0 || n != strings.Count(body, `data-testid="tool-card"`) {
			t.Errorf("%s: %d cards", p, n)
		}
	}
}

// TestFormPostsFromOurPages: a browser posting one of our forms sends
// Origin: null (the pages send no referrer) with Sec-Fetch-Site:
// same-origin, and is let through; other sites are not.
func TestFormPostsFromOurPages(t *testing.T) {
	e, _ := shareEnv(t, nil)
	e.session(t, "s1", twoCallSession())
	post := func(hdr ...string) int {
		req, _ := http.NewRequest("POST", e.base()+"/sessions/s1/shares", strings.NewReader("scope=live&redact=1"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, tc := range []struct {
		hdr  []string
		want int
	}{
		{[]string{"Origin", "null", "Sec-Fetch-Site", "same-origin"}, http.StatusOK}, // created: 303 to the page that shows it
		{[]string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{[]string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{[]string{"Origin", "null"}, http.StatusForbidden},
		{[]string{"Origin", "https://evil.example"}, http.StatusForbidden},
	} {
		if got := post(tc.hdr...); got != tc.want {
			t.Errorf("POST with %v: %d, want %d", tc.hdr, got, tc.want)
		}
	}
}
