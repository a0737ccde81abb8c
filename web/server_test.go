package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"prism/core"
	"prism/core/coretest"
	"prism/core/model"
	"prism/sources/dsh"
	"prism/web"
)

var update = flag.Bool("update", false, "rewrite golden files")

func doc(t *testing.T, body string) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var assetVersion = regexp.MustCompile(`\?v=[0-9a-f]+`)

// goldenPage compares a normalized page (asset hashes masked) with
// testdata/golden/web/<name>.html.
func goldenPage(t *testing.T, name, page string) {
	t.Helper()
	page = assetVersion.ReplaceAllString(page, "?v=H")
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		ind := strings.Repeat("  ", max(depth, 0))
		switch n.Type {
		case html.ElementNode:
			b.WriteString(ind + "<" + n.Data)
			for _, a := range n.Attr {
				b.WriteString(" " + a.Key + "=" + jsonQuote(a.Val))
			}
			b.WriteString(">\n")
		case html.TextNode:
			if strings.TrimSpace(n.Data) != "" {
				b.WriteString(ind + jsonQuote(n.Data) + "\n")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(root, -1)
	got := b.String()
	path := filepath.Join("..", "testdata", "golden", "web", name+".html")
	if *update {
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, d)
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var _ = atom.Body

func TestPages(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "demo", demoEvents(t))
	e.session(t, "other", nil)

	res, body := e.get(t, "/")
	if res.StatusCode != 200 {
		t.Fatalf("GET / = %d", res.StatusCode)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self' 'unsafe-eval'") || !strings.Contains(csp, "default-src 'self'") ||
		!strings.Contains(csp, "; img-src 'self' data:;") {
		t.Errorf("CSP = %q (images: this origin and data: only)", csp)
	}
	d := doc(t, body)
	if n := d.Find(`[data-testid="session-row"]`).Length(); n != 2 {
		t.Errorf("session rows = %d, want 2", n)
	}
	if got, _ := d.Find(`[data-session-id="demo"]`).Attr("data-status"); got != "idle" {
		t.Errorf("demo status = %q", got)
	}
	goldenPage(t, "list", body)

	_, body = e.get(t, "/?q=dem")
	if n := doc(t, body).Find(`[data-testid="session-row"]`).Length(); n != 1 {
		t.Errorf("search rows = %d, want 1", n)
	}

	res, body = e.get(t, "/sessions/demo")
	if res.StatusCode != 200 {
		t.Fatalf("GET /sessions/demo = %d", res.StatusCode)
	}
	d = doc(t, body)
	states := map[string]string{}
	d.Find(`[data-testid="tool-card"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("data-call-id")
		states[id], _ = s.Attr("data-state")
	})
	// The demo's calls in script order: note, glob, grep, three reads,
	// write, two edits, two commands (the second exits 1: completed, not
	// an error), the four failure classes, then the subagent.
	want := map[string]string{}
	for i := 1; i <= 16; i++ {
		want["call_demo_"+itoa(int64(i))] = map[bool]string{true: "ok", false: "error"}[i <= 11 || i == 16]
	}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("card states (-want +got):\n%s", diff)
	}
	if init, _ := d.Find("#stream").Attr("data-init"); init != "@get('/sessions/demo/stream?after=165', {requestCancellation: 'cleanup'})" {
		t.Errorf("stream opener = %q", init)
	}
	goldenPage(t, "session", body)

	res, body = e.get(t, "/sessions/demo/calls/call_demo_8")
	if res.StatusCode != 200 {
		t.Fatalf("call page = %d", res.StatusCode)
	}
	d = doc(t, body)
	for _, lane := range []string{"lane-raw-args", "lane-parsed-args", "lane-content", "lane-meta", "lane-call-view", "lane-result-view", "timing"} {
		if d.Find(`[data-testid="`+lane+`"]`).Length() != 1 {
			t.Errorf("call page lacks %s", lane)
		}
	}
	if !strings.Contains(d.Find(`[data-testid="lane-result-view"]`).Text(), `"card": "diff"`) {
		t.Errorf("result view lane = %q", d.Find(`[data-testid="lane-result-view"]`).Text())
	}
	_, body = e.get(t, "/sessions/demo/calls/call_demo_13")
	if got := doc(t, body).Find(`[data-testid="call-error"]`).Text(); got != "ToolNotFoundError / UNKNOWN_TOOL" {
		t.Errorf("error identity = %q", got)
	}

	for path, status := range map[string]int{
		"/sessions/nope": 404, "/sessions/demo/calls/nope": 404, "/api/sessions/nope/events": 404,
		"/static/nope.js": 404, "/healthz": 200, "/static/datastar.js": 200, "/static/app.css": 200,
	} {
		res, body := e.get(t, path)
		if res.StatusCode != status {
			t.Errorf("GET %s = %d, want %d (%s)", path, res.StatusCode, status, body[:min(len(body), 120)])
		}
	}
	res, body = e.get(t, "/static/datastar.js")
	if !strings.HasPrefix(body, "// Datastar v1.0.0") || !strings.Contains(res.Header.Get("Content-Type"), "javascript") {
		t.Errorf("datastar.js: %q, %q", res.Header.Get("Content-Type"), body[:30])
	}
}

func TestPages_QuotedCallID(t *testing.T) {
	e := newEnv(t, nil)
	events := quotedSession()
	b := coretest.NewBuilder(t0)
	b.Events = events[:len(events)-2]
	b.Time = events[len(events)-1].Time + 10
	b.Call("50%off", "note", `{}`).Call("a/b?c#d", "note", `{}`)
	b.Events = append(b.Events, events[len(events)-2:]...)
	for i := range b.Events {
		b.Events[i].Seq = int64(i)
	}
	e.session(t, "q", b.Events)
	_, body := e.get(t, "/sessions/q")
	d := doc(t, body)
	card := d.Find(`[data-call-id="a \"quoted\" call id with spaces"]`)
	if card.Length() != 1 {
		t.Fatal("no card for the quoted call id")
	}
	for _, id := range []string{`a "quoted" call id with spaces`, "50%off", "a/b?c#d", "ü/ß"} {
		sel := d.Find(`[data-testid="tool-card"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			v, _ := s.Attr("data-call-id")
			return v == id
		})
		href, _ := sel.Find("a.inspect").Attr("href")
		res, page := e.get(t, href)
		if res.StatusCode != 200 || doc(t, page).Find(`[data-testid="call-page"] h1 .mono`).Text() != id {
			t.Errorf("inspect link %q for call %q = %d", href, id, res.StatusCode)
		}
	}
}

func TestPages_LongSessionWindow(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.Window = 20 })
	b := coretest.NewBuilder(t0)
	for range 30 {
		b.TurnStart().StepStart().User("hi").Call("x", "note", `{}`).Result("x", "ok", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	}
	e.session(t, "long", b.Events)
	_, body := e.get(t, "/sessions/long")
	d := doc(t, body)
	shown := d.Find(`[data-testid="tool-card"]`).Length()
	if shown == 0 || shown >= 30 {
		t.Fatalf("first paint shows %d of 30 cards", shown)
	}
	btn := d.Find(`[data-testid="load-earlier"]`)
	expr, _ := btn.Attr("data-on:click")
	m := regexp.MustCompile(`@get\('([^']+)'\)`).FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("load-earlier expression = %q", expr)
	}
	sc := e.stream(t, m[1])
	ev := sc.next(t)
	more := len(cards(ev.Elements()))
	if more == 0 || ev.field("mode") != "" {
		t.Errorf("earlier patch: %d cards, mode %q", more, ev.field("mode"))
	}
	if !strings.Contains(ev.Elements(), `class="earlier loaded"`) {
		t.Errorf("earlier patch does not fill the placeholder: %.200s", ev.Elements())
	}
}

func TestAPI(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "demo", demoEvents(t))

	res, body := e.get(t, "/api/sessions")
	var list []web.SessionSummary
	if err := json.Unmarshal([]byte(body), &list); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /api/sessions = %d %v", res.StatusCode, err)
	}
	if len(list) != 1 || list[0].ID != "demo" || list[0].Calls != 16 || list[0].Errors != 4 || list[0].Title != model.DemoPrompt {
		t.Errorf("list = %+v", list)
	}

	res, export := e.get(t, "/api/sessions/demo/events")
	if res.StatusCode != 200 || !strings.HasPrefix(export, `{"type":"session","version":0,"id":"demo"`) {
		t.Fatalf("export = %d %.80s", res.StatusCode, export)
	}

	// Round trip: import the export into a fresh server, export again.
	e2 := newEnv(t, nil)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "demo.jsonl")
	io.WriteString(fw, export)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e2.ts.URL+"/api/sessions/import", &form)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r2, err := e2.ts.Client().Do(req)
	if err != nil || r2.StatusCode != 201 {
		t.Fatalf("import = %v %v", r2.StatusCode, err)
	}
	_, export2 := e2.get(t, "/api/sessions/demo/events")
	if export2 != export {
		t.Error("export → import → export is not identical")
	}

	// Raw-body import of a bad file.
	r3, _ := e2.ts.Client().Post(e2.ts.URL+"/api/sessions/import?name=x.jsonl", "application/x-ndjson", strings.NewReader("not json\n"))
	if r3.StatusCode != 400 {
		t.Errorf("bad import = %d, want 400", r3.StatusCode)
	}

	// Without a runner, starting sessions is unavailable.
	r4, _ := e.ts.Client().Post(e.ts.URL+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"hi"}`))
	b4, _ := io.ReadAll(r4.Body)
	if r4.StatusCode != 503 || !strings.Contains(string(b4), "no agent runner") {
		t.Errorf("POST /api/sessions = %d %s", r4.StatusCode, b4)
	}
	r5, _ := e.ts.Client().PostForm(e.ts.URL+"/sessions", map[string][]string{"prompt": {"hi"}})
	if r5.StatusCode != 503 {
		t.Errorf("POST /sessions = %d", r5.StatusCode)
	}
	// Cross-site POSTs are refused before anything else.
	req, _ = http.NewRequest(http.MethodPost, e.ts.URL+"/sessions/demo/cancel", nil)
	req.Header.Set("Origin", "https://evil.example")
	r6, _ := e.ts.Client().Do(req)
	if r6.StatusCode != 403 {
		t.Errorf("cross-origin POST = %d, want 403", r6.StatusCode)
	}
}

type fakeRunner struct{ started []web.StartRequest }

func (f *fakeRunner) StartSession(ctx context.Context, r web.StartRequest) (string, error) {
	f.started = append(f.started, r)
	return "new-1", nil
}
func (f *fakeRunner) SendMessage(ctx context.Context, id, text string) error { return nil }
func (f *fakeRunner) Cancel(ctx context.Context, id string) error {
	return core.Errorf(core.CodeConflict, "no running turn")
}

func TestAPI_Runner(t *testing.T) {
	fr := &fakeRunner{}
	e := newEnv(t, func(d *web.Deps) { d.Runner = fr })
	e.session(t, "s", nil)
	res, _ := e.ts.Client().Post(e.ts.URL+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"hi","model":"scripted"}`))
	var out map[string]string
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 201 || out["id"] != "new-1" || len(fr.started) != 1 || fr.started[0].Model != "scripted" {
		t.Errorf("start = %d %v %+v", res.StatusCode, out, fr.started)
	}
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/sessions/s/cancel", nil)
	req.Header.Set("Accept", "application/json")
	r2, _ := e.ts.Client().Do(req)
	if r2.StatusCode != 409 {
		t.Errorf("cancel conflict = %d, want 409", r2.StatusCode)
	}
	_, body := e.get(t, "/")
	if doc(t, body).Find(`[data-testid="start-form"]`).Length() != 1 {
		t.Error("no start form with a runner")
	}
}

// TestAPI_ExportIsSessionlogJSONL: the JSONL export is byte for byte what
// dsh.WriteJSONL (prism export) writes, header keys and
// delegationDepth included, and it round-trips through import.
func TestAPI_ExportIsSessionlogJSONL(t *testing.T) {
	e := newEnv(t, nil)
	seed := int64(3)
	h := core.SessionHeader{ID: "child", CreatedAt: t0, Cwd: "/work", ParentSession: "demo", SeedLength: &seed, Origin: "import"}
	if err := e.store.CreateSession(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	e.append(t, "child", demoEvents(t)...)
	l, err := e.store.LoadSession(context.Background(), "child")
	if err != nil {
		t.Fatal(err)
	}
	events := l.Events
	var want bytes.Buffer
	if err := dsh.WriteJSONL(&want, h, events); err != nil {
		t.Fatal(err)
	}
	res, got := e.get(t, "/api/sessions/child/events")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export = %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if got != want.String() {
		gl, wl, _ := strings.Cut(got, "\n")
		wantFirst, _, _ := strings.Cut(want.String(), "\n")
		t.Errorf("export differs from dsh.WriteJSONL:\n got %s\nwant %s\n(rest equal: %v)", gl, wantFirst, wl == strings.SplitN(want.String(), "\n", 2)[1])
	}
}

// ownerRunner owns only the sessions in mine.
type ownerRunner struct {
	fakeRunner
	mine map[string]bool
}

func (o *ownerRunner) Owns(id string) bool { return o.mine[id] }

// TestPages_ControlsOnlyForOwnedSessions: the follow-up and cancel forms
// are shown for a session the runner runs, not for one it does not (an
// imported or watched session, or one of an earlier run), whose POSTs
// would fail; a runner without Owns keeps them on every session.
func TestPages_ControlsOnlyForOwnedSessions(t *testing.T) {
	or := &ownerRunner{mine: map[string]bool{"mine": true}}
	e := newEnv(t, func(d *web.Deps) { d.Runner = or })
	e.session(t, "mine", nil)
	e.session(t, "imported", nil)
	controls := func(e *env, id string) int {
		_, body := e.get(t, "/sessions/"+id)
		d := doc(t, body)
		return d.Find(`[data-testid="message-form"]`).Length() + d.Find(`form[action$="/cancel"]`).Length()
	}
	if n := controls(e, "mine"); n != 2 {
		t.Errorf("owned session: %d controls, want the message and cancel forms", n)
	}
	if n := controls(e, "imported"); n != 0 {
		t.Errorf("session the runner does not own: %d controls, want none", n)
	}
	e2 := newEnv(t, func(d *web.Deps) { d.Runner = &fakeRunner{} })
	e2.session(t, "any", nil)
	if n := controls(e2, "any"); n != 2 {
		t.Errorf("runner without Owns: %d controls, want 2", n)
	}
	e3 := newEnv(t, nil)
	e3.session(t, "any", nil)
	if n := controls(e3, "any"); n != 0 {
		t.Errorf("no runner: %d controls, want none", n)
	}
}
