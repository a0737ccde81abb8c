package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
	"prism/web"
	"prism/web/ownerauth"
)

type apiHit struct {
	SessionID  string   `json:"sessionId"`
	CallID     string   `json:"callId"`
	Seq        *int64   `json:"seq"`
	Kind       string   `json:"kind"`
	Tool       string   `json:"tool"`
	Error      *string  `json:"error"`
	Time       int64    `json:"time"`
	Field      string   `json:"field"`
	Snippet    string   `json:"snippet"`
	Highlights [][2]int `json:"highlights"`
	URL        string   `json:"url"`
}

type apiPage struct {
	Hits       []apiHit `json:"hits"`
	NextCursor string   `json:"nextCursor"`
}

func (e *env) apiSearch(t *testing.T, query string, extra ...string) (int, apiPage, map[string]string) {
	t.Helper()
	u := views.APISearchURL(query, "", "", 0)
	for i := 0; i+1 < len(extra); i += 2 {
		u += "&" + url.QueryEscape(extra[i]) + "=" + url.QueryEscape(extra[i+1])
	}
	res, body := e.get(t, u)
	var page apiPage
	var errBody map[string]string
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatalf("%s: %v\n%s", u, err, body)
		}
	} else if err := json.Unmarshal([]byte(body), &errBody); err != nil {
		t.Fatalf("%s: status %d, body not JSON: %v\n%s", u, res.StatusCode, err, body)
	}
	return res.StatusCode, page, errBody
}

// marked returns the highlighted parts of a snippet.
func marked(t *testing.T, h apiHit) []string {
	t.Helper()
	runes := []rune(h.Snippet)
	var out []string
	for _, r := range h.Highlights {
		if r[0] < 0 || r[1] > len(runes) || r[0] >= r[1] {
			t.Fatalf("highlight %v out of %q", r, h.Snippet)
		}
		out = append(out, string(runes[r[0]:r[1]]))
	}
	return out
}

// TestAPISearch: the JSON shape, the highlights, and links that land on
// the card or event of each hit.
func TestAPISearch(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "demo", demoEvents(t))
	status, page, _ := e.apiSearch(t, "greet_test.go tool:read")
	if status != http.StatusOK || len(page.Hits) == 0 {
		t.Fatalf("status %d, %d hits", status, len(page.Hits))
	}
	for _, h := range page.Hits {
		if h.SessionID != "demo" || h.Kind != "call" || h.Tool != "read" || h.CallID == "" || h.Seq == nil || h.Time == 0 {
			t.Errorf("hit %+v: want a read card of session demo", h)
		}
		for _, m := range marked(t, h) {
			if !strings.EqualFold(m, "greet_test.go") {
				t.Errorf("hit %q marks %q", h.Snippet, m)
			}
		}
		want := views.SessionCallURL("demo", h.CallID, "") + "#" + views.CallElemID(h.CallID)
		if h.URL != want {
			t.Errorf("url %q, want %q", h.URL, want)
		}
	}
	// A user message lands on its event; a failed call carries its code.
	_, page, _ = e.apiSearch(t, "kind:user")
	if len(page.Hits) != 1 || page.Hits[0].CallID != "" || page.Hits[0].URL != views.SessionEventURL("demo", *page.Hits[0].Seq)+fmt.Sprintf("#ev-%d", *page.Hits[0].Seq) {
		t.Errorf("kind:user: %+v", page.Hits)
	}
	_, page, _ = e.apiSearch(t, "error:UNKNOWN_TOOL")
	if len(page.Hits) == 0 {
		t.Fatal("error:UNKNOWN_TOOL found nothing in the demo")
	}
	for _, h := range page.Hits {
		if h.Error == nil || *h.Error != core.CodeUnknownTool {
			t.Errorf("error:UNKNOWN_TOOL hit %+v", h)
		}
	}
	// Pages: limit and cursor walk every hit once.
	_, all, _ := e.apiSearch(t, "kind:call", "limit", "200")
	seen := map[string]bool{}
	cursor := ""
	for i := 0; ; i++ {
		args := []string{"limit", "4", "order", "time"}
		if cursor != "" {
			args = append(args, "cursor", cursor)
		}
		_, p, _ := e.apiSearch(t, "kind:call", args...)
		for _, h := range p.Hits {
			seen[h.URL] = true
		}
		if cursor = p.NextCursor; cursor == "" || i > 100 {
			break
		}
	}
	if len(seen) != len(all.Hits) || len(all.Hits) < 10 {
		t.Errorf("paging by 4 saw %d hits, one page of 200 has %d", len(seen), len(all.Hits))
	}
}

// TestSearchRefusesMalformedQueries: every query that cannot run is a 400
// with a message naming the trouble — never a 500, never SQLite's words.
func TestSearchRefusesMalformedQueries(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "s", demoEvents(t))
	for _, tc := range []struct {
		q, want string
		extra   []string
	}{
		{q: `"unbalanced`, want: "unclosed quote"},
		{q: `foo "bar baz`, want: "unclosed quote"},
		{q: "*", want: "* alone"},
		{q: "-only", want: "only excludes"},
		{q: "status:happy", want: "not a session status"},
		{q: "after:someday", want: "want a day like"},
		{q: strings.Repeat("lorem ipsum ", 900), want: "bytes long"},
		{q: "x", want: "order must be rank or time", extra: []string{"order", "best"}},
		{q: "x", want: "limit must be", extra: []string{"limit", "0"}},
		{q: "x", want: "limit must be", extra: []string{"limit", "lots"}},
		{q: "x", want: "malformed cursor", extra: []string{"cursor", "!!"}},
		{q: "", want: "q is required"},
	} {
		status, _, body := e.apiSearch(t, tc.q, tc.extra...)
		if status != http.StatusBadRequest || body["code"] != core.CodeInvalid || !strings.Contains(body["error"], tc.want) {
			t.Errorf("q=%.30q %v: %d %v, want 400 saying %q", tc.q, tc.extra, status, body, tc.want)
		}
		for _, leak := range []string{"fts", "sqlite", "SQL", "MATCH", "syntax error"} {
			if strings.Contains(body["error"], leak) {
				t.Errorf("q=%.30q: the message leaks %q: %s", tc.q, leak, body["error"])
			}
		}
	}
	// What FTS5 would choke on is plain text here: results, not errors.
	for _, q := range []string{"NEAR(", "NEAR(a b)", "AND OR NOT", "title:foo", "^start", `a + b`, "(", ")", "col:*x*", strings.Repeat("w", 5000)[:1000]} {
		if status, _, body := e.apiSearch(t, q); status != http.StatusOK && status != http.StatusBadRequest {
			t.Errorf("q=%.30q: %d %v", q, status, body)
		}
	}
	// The page shows the reason beside the query box, as a 400.
	res, body := e.get(t, views.SearchURL(`"unbalanced`, "", ""))
	doc, _ := goquery.NewDocumentFromReader(strings.NewReader(body))
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(doc.Find(`[data-testid="search-error"]`).Text(), "unclosed quote") {
		t.Errorf("page: %d, error %q", res.StatusCode, doc.Find(`[data-testid="search-error"]`).Text())
	}
	if v, _ := doc.Find(`[data-testid="search-input"]`).Attr("value"); v != `"unbalanced` {
		t.Errorf("the query box holds %q, want the query to fix", v)
	}
}

// TestSearchSnippetsCannotBeForged: tool output with markup, fake marks,
// control and bidi characters stays text; the only marks are the matches.
func TestSearchSnippetsCannotBeForged(t *testing.T) {
	e := newEnv(t, nil)
	hostile := "zebra <mark>forged</mark></span><script>alert(1)</script><img src=x onerror=alert(2)> \u202Eevil\x1b[31m &lt;mark&gt; zebra"
	args, _ := json.Marshal(map[string]string{"command": hostile})
	e.session(t, "h", []core.Event{
		{Type: core.EventToolCall, Seq: 0, Time: t0, Data: json.RawMessage(fmt.Sprintf(`{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":%q}`, args))},
	})
	_, page, _ := e.apiSearch(t, "zebra")
	if len(page.Hits) != 1 {
		t.Fatalf("hits %+v", page.Hits)
	}
	h := page.Hits[0]
	if got := marked(t, h); len(got) != 2 || got[0] != "zebra" || got[1] != "zebra" {
		t.Errorf("marks %q, want the two zebras", got)
	}
	if strings.ContainsAny(h.Snippet, "\u202E\x1b") || !utf8.ValidString(h.Snippet) {
		t.Errorf("snippet keeps control characters: %q", h.Snippet)
	}
	_, body := e.get(t, views.SearchURL("zebra", "", ""))
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	snip := doc.Find(`[data-testid="snippet"]`)
	if snip.Length() != 1 {
		t.Fatalf("%d snippets", snip.Length())
	}
	if marks := snip.Find("mark"); marks.Length() != 2 || marks.First().Text() != "zebra" {
		t.Errorf("page marks %d: %q", marks.Length(), marks.Text())
	}
	if snip.Find("script, img, span").Length() != 0 || doc.Find("script:not([src])").Length() != 0 {
		t.Errorf("markup from the output became elements: %s", must(snip.Html()))
	}
	if !strings.Contains(snip.Text(), "<mark>forged</mark>") || !strings.Contains(snip.Text(), "<script>alert(1)</script>") {
		t.Errorf("the output's text is not shown as text: %q", snip.Text())
	}
}

func must(s string, _ error) string { return s }

// TestSearchPageGroupsBySession: hits grouped under their sessions, each
// linking where the API says.
func TestSearchPageGroupsBySession(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "one", demoEvents(t))
	e.session(t, "two", demoEvents(t))
	_, api, _ := e.apiSearch(t, "greet", "limit", "50")
	_, body := e.get(t, views.SearchURL("greet", "", ""))
	doc, _ := goquery.NewDocumentFromReader(strings.NewReader(body))
	groups := doc.Find(`[data-testid="hit-group"]`)
	if groups.Length() != 2 {
		t.Fatalf("%d groups, want one per session", groups.Length())
	}
	var links []string
	groups.Each(func(_ int, g *goquery.Selection) {
		id, _ := g.Attr("data-session-id")
		g.Find(`[data-testid="hit"] a`).Each(func(_ int, a *goquery.Selection) {
			href, _ := a.Attr("href")
			if !strings.HasPrefix(href, views.SessionURL(id)) {
				t.Errorf("group %s links %s", id, href)
			}
			links = append(links, href)
		})
	})
	if len(links) != len(api.Hits) {
		t.Errorf("the page shows %d hits, the API %d", len(links), len(api.Hits))
	}
	// A query without hits says so, with the query.
	_, body = e.get(t, views.SearchURL("zzzqqq", "", ""))
	doc, _ = goquery.NewDocumentFromReader(strings.NewReader(body))
	if got := doc.Find(`[data-testid="no-hits"]`).Text(); !strings.Contains(got, "zzzqqq") {
		t.Errorf("no hits: %q", got)
	}
}

// TestListFiltersAndOrders: status, has-errors and the orders, the empty
// search, and refusals of unknown values.
func TestListFiltersAndOrders(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "demo-a", demoEvents(t)) // idle, 6 errors
	e.session(t, "quiet", []core.Event{
		{Type: core.EventTurnStart, Seq: 0, Time: t0 + 5, Data: json.RawMessage(`{"turn":1}`)},
	}) // running, no errors
	rows := func(path string) []string {
		t.Helper()
		res, body := e.get(t, path)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
		doc, _ := goquery.NewDocumentFromReader(strings.NewReader(body))
		var ids []string
		doc.Find(`[data-testid="session-row"]`).Each(func(_ int, s *goquery.Selection) {
			id, _ := s.Attr("data-session-id")
			ids = append(ids, id)
		})
		return ids
	}
	for _, tc := range []struct {
		f    views.ListFilter
		want string
	}{
		{views.ListFilter{}, "demo-a quiet"}, // the latest event first
		{views.ListFilter{Status: "running"}, "quiet"},
		{views.ListFilter{Status: "idle"}, "demo-a"},
		{views.ListFilter{HasErrors: true}, "demo-a"},
		{views.ListFilter{Sort: "errors"}, "demo-a quiet"},
		{views.ListFilter{Sort: "calls"}, "demo-a quiet"},
		{views.ListFilter{Sort: "created"}, "quiet demo-a"}, // created together: by id
		{views.ListFilter{Query: "demo", Status: "running"}, ""},
	} {
		if got := strings.Join(rows(views.ListURL(tc.f)), " "); got != tc.want {
			t.Errorf("%s: rows %q, want %q", views.ListURL(tc.f), got, tc.want)
		}
	}
	_, body := e.get(t, views.HomeURL("zzz"))
	doc, _ := goquery.NewDocumentFromReader(strings.NewReader(body))
	if got := doc.Find(`[data-testid="no-sessions"]`).Text(); !strings.Contains(got, "No sessions match") || doc.Find(`[data-testid="no-match-query"]`).Text() != "zzz" {
		t.Errorf("empty search says %q", got)
	}
	if href, _ := doc.Find(`[data-testid="search-events-link"]`).Attr("href"); href != views.SearchURL("zzz", "", "") {
		t.Errorf("the empty list offers %q", href)
	}
	for _, bad := range []string{"/?status=happy", "/?sort=size", "/?errors=maybe", "/api/sessions?status=x"} {
		if res, _ := e.get(t, bad); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, res.StatusCode)
		}
	}
}

// TestListStreamKeepsItsFilter: a filtered list's stream adds a row that
// starts to match and sends the list again when one stops matching.
func TestListStreamKeepsItsFilter(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.ListThrottle = 1 })
	e.session(t, "calm", nil)
	sc := e.stream(t, views.ListFilterStreamURL(views.ListFilter{Status: "running"}))
	if first := sc.next(t); strings.Contains(first.Elements(), `data-session-id="calm"`) {
		t.Fatalf("an idle session in the running list: %s", first.Elements())
	}
	b := coretest.NewBuilder(t0)
	b.TurnStart()
	e.append(t, "calm", b.Events...)
	ev := sc.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-session-id="calm"`) })
	if got := ev[len(ev)-1]; got.field("mode") != "prepend" {
		t.Errorf("a session that starts running: mode %q, want prepend", got.field("mode"))
	}
	b.TurnEnd("completed")
	e.append(t, "calm", b.Events[1:]...)
	ev = sc.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `<tbody id="session-rows">`) })
	if got := ev[len(ev)-1].Elements(); strings.Contains(got, `data-session-id="calm"`) {
		t.Errorf("a session that stopped running is still listed: %s", got)
	}
}

// TestSearchIsOwnerOnly: search reaches across every session, so it is the
// owner's alone. A share link's reader cannot reach it — not through the
// share listener, not under the link's path, not without the owner token
// on the main listener — and a share page does not offer it.
func TestSearchIsOwnerOnly(t *testing.T) {
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := shareEnv(t, func(d *web.Deps) { d.Owner = guard })
	e.session(t, "s1", twoCallSession())
	auth := []string{"Authorization", "Bearer " + ownerToken}
	_, path := e.share(t, "s1", "{}", auth...)
	q := "noted" // the results would show "noted first"

	// The owner finds the session's text.
	if res, body := e.get(t, views.APISearchURL(q, "", "", 0), auth...); res.StatusCode != http.StatusOK || !strings.Contains(body, "noted first") {
		t.Fatalf("the owner's search: %d %s", res.StatusCode, body)
	}
	// Without the owner token: 401, the login page for a browser.
	if res, body := e.get(t, views.APISearchURL(q, "", "", 0)); res.StatusCode != http.StatusUnauthorized || strings.Contains(body, "noted first") {
		t.Errorf("/api/search without the owner: %d %s", res.StatusCode, body)
	}
	if status, page := e.raw(t, "GET", views.SearchURL(q, "", "")); status != http.StatusUnauthorized || !strings.Contains(page, `data-testid="login-page"`) || strings.Contains(page, "noted first") {
		t.Errorf("/search without the owner: %d", status)
	}
	// Under the link's path there is no search.
	for _, p := range []string{path + "/search?q=" + q, path + "/api/search?q=" + q, path + "/search"} {
		if status, body := e.raw(t, "GET", p); status != http.StatusNotFound || strings.Contains(body, "noted first") {
			t.Errorf("%s: %d", p, status)
		}
	}
	// The share listener answers search with its 404.
	ts := httptest.NewServer(e.srv.ShareHandler())
	t.Cleanup(ts.Close)
	for _, p := range []string{views.SearchURL(q, "", ""), views.APISearchURL(q, "", "", 0)} {
		res, err := ts.Client().Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || strings.Contains(string(b), "noted first") {
			t.Errorf("%s on the share listener: %d", p, res.StatusCode)
		}
	}
	// The share page links to no search; its filter bar filters only the
	// cards the link shows (in the browser, over the page's own HTML).
	status, page := e.raw(t, "GET", path)
	if status != http.StatusOK {
		t.Fatalf("share page: %d", status)
	}
	d, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Find(`a[href^="/search"], a[href^="/api/search"], form[action^="/search"]`).Length(); n != 0 {
		t.Errorf("the share page offers search (%d links)", n)
	}
}
