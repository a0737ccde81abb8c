package main

import (
	"encoding/json"
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

	"prism/backend"
	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/core/model"
	"prism/web"
)

// turnEnds tells a test when a session's turn ended.
type turnEnds struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func (e *turnEnds) wait(id string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch == nil {
		e.ch = map[string]chan struct{}{}
	}
	if e.ch[id] == nil {
		e.ch[id] = make(chan struct{})
	}
	return e.ch[id]
}

func (e *turnEnds) on(id string, ev core.Event) {
	if ev.Type != core.EventTurnEnd {
		return
	}
	ch := e.wait(id)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// forkTurnEnds is the turn ends of forkServer's runners (ids are unique
// across tests).
var forkTurnEnds turnEnds

// forkServer is the whole stack over a real SQLite file: a runner that
// forks through the store, the web server on httptest, and the scripted
// demo's session stored as "demo".
func forkServer(t *testing.T) (*httptest.Server, *agent.Runner, []core.Event) {
	t.Helper()
	ctx := t.Context()
	log := quietLog()
	st, feed := openTestStore(t, log)
	h, events := agenttest.DemoLog(t, 1767225600000)
	h.ID = "demo"
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "demo", events); err != nil {
		t.Fatal(err)
	}
	reg, err := backend.Presenters(log)
	if err != nil {
		t.Fatal(err)
	}
	load, put := forkSources(st)
	catalog := model.NewCatalog(model.CatalogConfig{Default: model.DemoModelName, DemoPacing: &model.Pacing{}, Logger: log})
	runner, err := agent.NewRunner(agent.RunnerConfig{Store: st, Tools: reg, Models: catalog, WorkspaceRoot: t.TempDir(),
		Logger: log, Load: load, PutNote: put, OnEvent: forkTurnEnds.on})
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Deps{Sessions: backend.Source{Store: st}, Commits: feed, Runner: backend.AgentRunner{Runner: runner}, Presenter: reg, Logger: log, Notes: st})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		runner.Close()
	})
	return ts, runner, events
}

// TestForkAPI: POST /api/sessions/{id}/forks answers 201 with the new
// session, and dsh's fork codes as 4xx with their texts; the page's form
// forks and redirects to the fork.
func TestForkAPI(t *testing.T) {
	ts, runner, _ := forkServer(t)
	post := func(path, ct, body string) (int, map[string]string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]string
		_ = json.Unmarshal(b, &out)
		return res.StatusCode, out, res.Header.Get("Location")
	}
	const js = "application/json"
	status, out, _ := post("/api/sessions/demo/forks", js, `{"atTurn":1}`)
	if status != 201 || out["id"] == "" || out["parentSession"] != "demo" || out["url"] != "/sessions/"+out["id"] {
		t.Fatalf("fork = %d %v", status, out)
	}
	if st, err := runner.Status(out["id"]); err != nil || st.Running {
		t.Errorf("the fork without a prompt: %+v %v; want owned and idle", st, err)
	}
	status, out, _ = post("/api/sessions/demo/forks", js, `{"id":"mine","atTurn":0,"prompt":"again","tools":"live"}`)
	if status != 201 || out["id"] != "mine" {
		t.Fatalf("fork with an id = %d %v", status, out)
	}
	// A fork's title says it is one, unless the request names one.
	for id, want := range map[string]string{
		"": "fork of “Show me around this workspace: its files, loose ends, a small fix, and failures.” at turn 1", "titled": "my branch"} {
		body := `{"atTurn":1}`
		if id != "" {
			body = `{"id":"` + id + `","atTurn":1,"title":"my branch"}`
		}
		status, out, _ := post("/api/sessions/demo/forks", js, body)
		if status != 201 {
			t.Fatalf("fork %s = %d %v", body, status, out)
		}
		res, err := http.Get(ts.URL + "/sessions/" + out["id"])
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(page), "<h1>"+want+"</h1>") {
			t.Errorf("the page of fork %s lacks its title <h1>%s</h1>", body, want)
		}
	}
	for _, tc := range []struct {
		path, body string
		status     int
		code, text string
	}{
		{"/api/sessions/nope/forks", `{"atTurn":1}`, 404, core.CodeSessionNotFound, `cannot fork session "nope": it does not exist`},
		{"/api/sessions/demo/forks", `{"atTurn":1,"id":"demo"}`, 409, core.CodeSessionAlreadyExists, `cannot fork session "demo" into "demo": a session with that id already exists`},
		{"/api/sessions/demo/forks", `{"atTurn":2}`, 400, core.CodeInvalidBoundary, "past the end, the session has 1 completed turns"},
		{"/api/sessions/demo/forks", `{"atSeq":5}`, 409, core.CodeOpenTurn, `cannot fork session "demo" at seq 5: it lies inside turn 1`},
		{"/api/sessions/demo/forks", `{}`, 400, core.CodeInvalidBoundary, "give exactly one boundary"},
		{"/api/sessions/demo/forks", `{"atTurn":1,"tools":"sometimes"}`, 400, core.CodeInvalid, `tools must be "replay" or "live"`},
		{"/api/sessions/demo/forks", `{"atTurn":"one"}`, 400, core.CodeInvalid, ""},
	} {
		status, out, _ := post(tc.path, js, tc.body)
		if status != tc.status || out["code"] != tc.code || !strings.Contains(out["error"], tc.text) {
			t.Errorf("POST %s %s = %d %v; want %d %s %q", tc.path, tc.body, status, out, tc.status, tc.code, tc.text)
		}
	}
	// The page's form.
	status, _, loc := post("/sessions/demo/forks", "application/x-www-form-urlencoded", url.Values{"atTurn": {"1"}, "prompt": {"once more"}, "title": {"the form's fork"}}.Encode())
	if status != 303 || !strings.HasPrefix(loc, "/sessions/") || loc == "/sessions/demo" {
		t.Fatalf("fork form = %d → %q", status, loc)
	}
	id, _ := url.PathUnescape(strings.TrimPrefix(loc, "/sessions/"))
	if _, err := runner.Status(id); err != nil {
		t.Errorf("the form's fork %q is not run here: %v", id, err)
	}
	res, err := http.Get(ts.URL + loc)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "<h1>the form&#39;s fork</h1>") {
		t.Errorf("the form's fork lacks the form's title")
	}
}

// TestForkLineage: the fork's header names its parent and turn, the
// source's header its forks, and the tree page nests a fork of a fork
// below its parent.
func TestForkLineage(t *testing.T) {
	ts, runner, _ := forkServer(t)
	ctx := t.Context()
	one := 1
	zero := 0
	if _, err := runner.Fork(ctx, agent.ForkRequest{Source: "demo", ID: "f1", Boundary: core.ForkBoundary{AtTurn: &one}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Fork(ctx, agent.ForkRequest{Source: "demo", ID: "f2", Boundary: core.ForkBoundary{AtTurn: &zero}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Fork(ctx, agent.ForkRequest{Source: "f1", ID: "f1a", Boundary: core.ForkBoundary{AtTurn: &one}}); err != nil {
		t.Fatal(err)
	}
	page := func(path string) *goquery.Document {
		t.Helper()
		res, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET %s = %d", path, res.StatusCode)
		}
		d, err := goquery.NewDocumentFromReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := strings.Join(strings.Fields(page("/sessions/f1").Find(`[data-testid="fork-of"] dd`).Text()), " "); got != "demo at turn 1" {
		t.Errorf("f1's header says %q", got)
	}
	if got := strings.Join(strings.Fields(page("/sessions/f2").Find(`[data-testid="fork-of"] dd`).Text()), " "); got != "demo at turn 0" {
		t.Errorf("f2's header says %q", got)
	}
	if href, _ := page("/sessions/f1").Find(`[data-testid="compare-source"] a`).Attr("href"); href != "/compare/demo/f1" {
		t.Errorf("f1's header compares with %q, want /compare/demo/f1", href)
	}
	forks := page("/sessions/demo").Find(`[data-testid="forks"]`)
	if got := strings.Join(strings.Fields(forks.Find("dd").Text()), " "); got != "f1 f2 2 forks ›" {
		t.Errorf("demo's header forks: %q", got)
	}
	if href, _ := forks.Find(`[data-testid="forks-tree"]`).Attr("href"); href != "/sessions/demo/forks" {
		t.Errorf("tree link %q", href)
	}
	tree := page("/sessions/demo/forks")
	var nodes []string
	tree.Find(`[data-testid="fork-node"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("data-session")
		parent, _ := s.Parent().Closest(`[data-testid="fork-node"]`).Attr("data-session")
		nodes = append(nodes, parent+">"+id)
	})
	if got := strings.Join(nodes, " "); got != ">f1 f1>f1a >f2" {
		t.Errorf("fork tree %q", got)
	}
	list := page("/")
	if got := list.Find(`[data-session-id="demo"] [data-testid="row-forks"]`).Text(); got != "2 forks" {
		t.Errorf("demo's list row says %q forks", got)
	}
	if got := list.Find(`[data-session-id="f1"] [data-testid="row-forks"]`).Text(); got != "1 fork" {
		t.Errorf("f1's list row says %q forks", got)
	}
	if n := list.Find(`[data-session-id="f2"] [data-testid="row-forks"]`).Length(); n != 0 {
		t.Error("f2's list row shows forks it does not have")
	}
	if page("/sessions/f2/forks").Find(`[data-testid="no-forks"]`).Length() != 1 {
		t.Error("a session without forks does not say so")
	}
}

// TestForkReplayedCards: a fork of the demo at turn 0 with its prompt on
// the scripted demo model answers every call from the source; once the
// turn ended, each of the fork's cards says "replayed from demo #seq",
// linking the source's call.
func TestForkReplayedCards(t *testing.T) {
	ts, runner, events := forkServer(t)
	zero := 0
	id := "replay-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ended := forkTurnEnds.wait(id)
	if _, err := runner.Fork(t.Context(), agent.ForkRequest{Source: "demo", ID: id, Boundary: core.ForkBoundary{AtTurn: &zero},
		Prompt: "Show me around this workspace"}); err != nil {
		t.Fatal(err)
	}
	<-ended
	_ = runner.Close() // waits for the replayed notes
	var calls []int64
	for _, e := range events {
		if e.Type == core.EventToolCall {
			calls = append(calls, e.Seq)
		}
	}
	res, err := ts.Client().Get(ts.URL + "/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	d, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	marks := d.Find(`[data-testid="tool-card"] [data-testid="replayed"]`)
	if marks.Length() != len(calls) || d.Find(`[data-testid="tool-card"]`).Length() != len(calls) {
		t.Fatalf("%d replayed marks on %d cards, want one on each of %d", marks.Length(), d.Find(`[data-testid="tool-card"]`).Length(), len(calls))
	}
	marks.Each(func(i int, s *goquery.Selection) {
		want := "replayed from demo #" + strconv.FormatInt(calls[i], 10)
		if got := strings.TrimSpace(s.Text()); got != want {
			t.Errorf("mark %d says %q, want %q", i, got, want)
		}
		if href, _ := s.Attr("href"); !strings.HasPrefix(href, "/sessions/demo?") || !strings.Contains(href, strconv.FormatInt(calls[i], 10)) {
			t.Errorf("mark %d links %q", i, href)
		}
	})
}
