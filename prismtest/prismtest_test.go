package prismtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/tools"
	"prism/prismtest"
	"prism/views"
	"prism/views/testgen"
)

// recorder is a testing.TB that records failures instead of failing the
// test, so a test can check what prismtest reports. Fatal ends the calling
// goroutine, as testing's does: run the code under test with run.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder over t on its own goroutine and returns what
// it reported.
func run(t *testing.T, f func(testing.TB)) []string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.errors
}

func TestCardStatesTitlesAndProjection(t *testing.T) {
	reg := greetRegistry()
	type want struct {
		pending, state, kind, title, content, meta string
		err                                        *core.ErrorInfo
	}
	for _, tc := range []struct {
		args string
		want want
	}{
		{`{"name":"Ada"}`, want{"pending", "ok", "generic", "Greeted Ada", "Hello, Ada!", `{"length":11}`, nil}},
		{`{"name":42}`, want{"pending", "error", "generic", "greet", `Error: invalid arguments: "name" must be a string`, "",
			&core.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"}}},
		{`{"name":"nobody"}`, want{"pending", "error", "generic", "Could not greet nobody", "Error: there is nobody to greet", "", nil}},
	} {
		t.Run(tc.args, func(t *testing.T) {
			c := prismtest.Card(t, reg, "greet", tc.args)
			got := want{c.Pending.State(), c.State(), c.Completed.Kind(), c.Title(), c.Content(), string(c.Result.Meta), c.Error}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c, diff)
			}
			if c.Result.IsError != (tc.want.state == "error") {
				t.Errorf("%s: isError = %v with card state %s", c, c.Result.IsError, c.State())
			}
			// Both cards are the same element: the live page morphs one
			// into the other by id.
			if p, d := c.Pending.Card().AttrOr("id", "?"), c.Completed.Card().AttrOr("id", "!"); p != d {
				t.Errorf("%s: pending card id %s, completed %s", c, p, d)
			}
			if !strings.HasPrefix(c.Completed.HTML, "<article") || c.Pending.HTML == c.Completed.HTML {
				t.Errorf("%s: cards are not two renderings of one article:\npending %s\ncompleted %s", c, c.Pending.HTML, c.Completed.HTML)
			}
		})
	}
}

func TestCardLogsTheCallAsTheLoopDoes(t *testing.T) {
	c := prismtest.Card(t, greetRegistry(), "greet", `{"name":"Ada"}`, prismtest.WithCallID("greet-1"))
	if err := core.ValidateLog(c.Header, c.Events); err != nil {
		t.Fatalf("the logged session is not a valid log: %v", err)
	}
	var call core.ToolCall
	for _, e := range c.Events {
		if e.Type == core.EventToolCall {
			if err := e.DecodeData(&call); err != nil {
				t.Fatal(err)
			}
		}
	}
	if call.CallID != "greet-1" || call.Name != "greet" || call.Arguments != `{"name":"Ada"}` {
		t.Errorf("tool/call = %+v; want call greet-1 of greet with the raw arguments", call)
	}
	if c.Completed.Card().AttrOr("data-call-id", "") != "greet-1" {
		t.Errorf("completed card is for %q", c.Completed.Card().AttrOr("data-call-id", ""))
	}
	// Fixed clock: the card's time is the same on every run.
	if got := c.Completed.Find("time").AttrOr("datetime", ""); !strings.HasPrefix(got, "2026-01-01T00:00:00.") {
		t.Errorf("card time %q; want on 2026-01-01 (T0)", got)
	}
}

func TestCardUnknownTool(t *testing.T) {
	c := prismtest.Card(t, greetRegistry(), "deploy", `{"target":"prod"}`)
	if c.State() != "error" || c.Error == nil || c.Error.Code != "UNKNOWN_TOOL" {
		t.Errorf("%s: state %s, error %+v; want an error card with UNKNOWN_TOOL", c, c.State(), c.Error)
	}
}

// A built-in file tool reads from the session's working directory; its
// golden writes that directory as {cwd}, so it is the same on every machine.
func TestCardWithCwdGolden(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	builtins, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(builtins...)
	c := prismtest.Card(t, reg, "read", `{"file_path":"hello.txt"}`, prismtest.WithCwd(ws))
	if c.State() != "ok" || c.Completed.Kind() != "read" || !strings.Contains(c.Completed.Text(), "world") {
		t.Fatalf("%s: %s %s card: %s", c, c.State(), c.Completed.Kind(), c.Completed.Text())
	}
	c.Golden(t, "testdata/read-hello.golden")
	golden, err := os.ReadFile("testdata/read-hello.golden")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(golden), ws) || !strings.Contains(string(golden), "{cwd}") {
		t.Errorf("the golden holds the workspace path %s instead of {cwd}", ws)
	}
}

func TestGoldenReportsADiff(t *testing.T) {
	c := prismtest.Card(t, greetRegistry(), "greet", `{"name":"Ada"}`)
	path := filepath.Join(t.TempDir(), "greet.golden")
	stale := strings.Replace(mustRead(t, "testdata/greet-ada.golden"), `"Greeted Ada"`, `"Greeted Bob"`, 1)
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := run(t, func(tb testing.TB) { c.Golden(tb, path) })
	if len(errs) != 1 || !strings.Contains(errs[0], `-      "Greeted Bob"`) || !strings.Contains(errs[0], `+      "Greeted Ada"`) ||
		!strings.Contains(errs[0], "go test -update") {
		t.Errorf("Golden against a stale file reported %q; want one unified diff naming -update", errs)
	}

	missing := filepath.Join(t.TempDir(), "missing.golden")
	errs = run(t, func(tb testing.TB) { c.Golden(tb, missing) })
	if len(errs) != 1 || !strings.Contains(errs[0], "does not exist") || !strings.Contains(errs[0], "-update") {
		t.Errorf("Golden without a file reported %q; want that it does not exist and how to write it", errs)
	}
}

func TestCardNilRegistry(t *testing.T) {
	errs := run(t, func(tb testing.TB) { prismtest.Card(tb, nil, "greet", `{}`) })
	if len(errs) != 1 || !strings.Contains(errs[0], "registry is nil") {
		t.Errorf("Card(nil registry) reported %q", errs)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The swap on the stream: the pending card is appended while the call is
// held, and the completed card is the same element, sent as a morph.
func TestServerStreamSwap(t *testing.T) {
	reg := greetRegistry()
	gate := prismtest.Hold(t, reg, "greet")
	srv := prismtest.NewServer(t, prismtest.Options{Tools: reg,
		Script: prismtest.NewScript().Step("Greeting.", prismtest.Call("greet", `{"name":"Ada"}`)).Final("Done.")})
	id := srv.Start("Greet Ada.")
	st := srv.Stream(id)
	pending := st.Card("call_1", "pending")
	if held := <-gate.Held(); held != "call_1" {
		t.Errorf("held call %q; want call_1", held)
	}
	// While held, the saved page shows the pending card too.
	if got := srv.Page(id).Find(prismtest.CardSelector("call_1")).AttrOr("data-state", ""); got != "pending" {
		t.Errorf("page while the call is held: card state %q; want pending", got)
	}
	gate.Release()
	done := st.Card("call_1", "ok")
	if pending.AttrOr("id", "?") != done.AttrOr("id", "!") {
		t.Errorf("pending card id %s, completed %s: the page could not morph one into the other",
			pending.AttrOr("id", "?"), done.AttrOr("id", "!"))
	}
	frames := st.Frames()
	last := frames[len(frames)-1]
	if last.Mode() != "" || last.Event != "datastar-patch-elements" {
		t.Errorf("the completed card came as %s (mode %q); want a morph by id", last, last.Mode())
	}
	if last.ID == "" {
		// The card's update shares its SSE batch with the events committed
		// beside the result; the batch's last event carries the id a
		// reconnecting page resumes after.
		st.Until(func(f prismtest.Frame) bool { return f.ID != "" })
	}
	srv.Wait(id)
}

func TestServerFollowUpAndEvents(t *testing.T) {
	srv := prismtest.NewServer(t, prismtest.Options{Tools: greetRegistry(),
		Script: prismtest.NewScript().Step("", prismtest.Call("greet", `{"name":"Ada"}`)).Final("Greeted.")})
	id := srv.Start("Greet Ada.")
	srv.Send(id, "And now?")
	srv.Wait(id)
	var turnEnds, results int
	for _, e := range srv.Events(id) {
		switch e.Type {
		case core.EventTurnEnd:
			turnEnds++
		case core.EventToolResult:
			results++
		}
	}
	if turnEnds != 2 || results != 1 {
		t.Errorf("after a prompt and a follow-up: %d turn/end, %d tool/result; want 2 and 1", turnEnds, results)
	}
	page := srv.Page(id)
	if page.Find(prismtest.CardSelector("call_1")).AttrOr("data-state", "") != "ok" {
		t.Errorf("page has no completed card call_1")
	}
	// The scripted model echoes once the script is played.
	if !strings.Contains(page.Text(), "And now?") {
		t.Errorf("page does not show the follow-up message")
	}
	list := srv.Get("/")
	if list.Find(`a[href="/sessions/`+id+`"]`).Length() == 0 {
		t.Errorf("the session list does not link session %s", id)
	}
}

// TestPresentIsReplay: Present renders a recording of a call exactly as
// the call's own cards were rendered from its log — the recording taken
// from the fold as prism testgen takes it — so a golden written by prism
// is what a generated test compares with.
func TestPresentIsReplay(t *testing.T) {
	reg := greetRegistry()
	for _, args := range []string{`{"name":"Ada"}`, `{"name":"nobody"}`, `{"name":`} {
		c := prismtest.Card(t, reg, "greet", args)
		card, err := testgen.Find(views.Fold(c.Header, c.Events, reg), c.Header.ID, c.CallID, "")
		if err != nil {
			t.Fatal(err)
		}
		rec, err := testgen.FromCard(c.Header, card)
		if err != nil {
			t.Fatal(err)
		}
		p := prismtest.Present(t, reg, rec)
		if p.Pending.HTML != c.Pending.HTML || p.Completed.HTML != c.Completed.HTML {
			t.Errorf("%s: Present's cards differ from Card's:\npending  %s\n         %s\ncompleted %s\n          %s",
				c, p.Pending.HTML, c.Pending.HTML, p.Completed.HTML, c.Completed.HTML)
		}
		if (p.Error == nil) != (c.Error == nil) || p.State() != c.State() {
			t.Errorf("%s: Present's error %v, state %s; Card's %v, %s", c, p.Error, p.State(), c.Error, c.State())
		}
	}
}

// TestRerunAndRequireTool: Rerun passes for a pure tool's faithful
// recording and fails naming the field for an altered one, refuses a tool
// not declared pure; RequireTool fails with directions to the marked line.
func TestRerunAndRequireTool(t *testing.T) {
	reg := prismtest.Builtins(t)
	c := prismtest.Card(t, reg, "note", `{"title":"Plan"}`)
	rec := prismtest.Recording{Version: 1, CallID: "call_1", Tool: "note", Arguments: `{"title":"Plan"}`, Logged: true, Result: c.Result}
	if errs := run(t, func(tb testing.TB) { prismtest.Rerun(tb, reg, rec) }); len(errs) != 0 {
		t.Errorf("Rerun of a faithful recording failed: %q", errs)
	}
	altered := rec
	altered.Result.Meta = []byte(`{"lineCount":3,"title":"Plan"}`)
	if errs := run(t, func(tb testing.TB) { prismtest.Rerun(tb, reg, altered) }); len(errs) != 1 || !strings.Contains(errs[0], "its meta differs from the recording") {
		t.Errorf("Rerun of an altered meta reported %q", errs)
	}
	read := rec
	read.Tool = "read"
	if errs := run(t, func(tb testing.TB) { prismtest.Rerun(tb, reg, read) }); len(errs) != 1 || !strings.Contains(errs[0], "not declared pure") {
		t.Errorf("Rerun of read reported %q", errs)
	}
	greet := rec
	greet.Tool = "greet"
	errs := run(t, func(tb testing.TB) { prismtest.RequireTool(tb, reg, greet, "greet_test.go") })
	if len(errs) != 1 || !strings.Contains(errs[0], `tool "greet" is not registered: register it on the line marked "TODO: register your tool here" in greet_test.go`) {
		t.Errorf("RequireTool reported %q", errs)
	}
}
