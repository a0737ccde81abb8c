package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/approval"
	"prism/core/coretest"
	"prism/web"
)

// waitingApprovals is fakeApprovals with approvals waiting.
type waitingApprovals struct {
	fakeApprovals
	list []approval.Pending
}

func (w waitingApprovals) Pending() []approval.Pending { return w.list }

// TestBoard: /board lists the running sessions only, those waiting for a
// person first, each with its call in flight; its inline Approve posts to
// the card's own approval endpoint; the list links the board while
// sessions run.
func TestBoard(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) {
		d.Runner = &fakeRunner{}
		d.Approvals = waitingApprovals{list: []approval.Pending{{ID: "a1", SessionID: "b", CallID: "cb", ToolName: "bash", Reason: "bash asks"}}}
	})
	running := func(id, tool string) []core.Event {
		b := coretest.NewBuilder(t0)
		b.TurnStart().StepStart().User("go").Call("c"+id, tool, `{}`)
		return b.Events
	}
	e.session(t, "a", running("a", "read"))
	e.session(t, "b", running("b", "bash"))
	ended := coretest.NewBuilder(t0)
	ended.TurnStart().StepStart().User("hi").StepEnd().TurnEnd(core.TurnCompleted)
	e.session(t, "c", ended.Events)

	page := get(t, e.ts.URL+"/board")
	ids := regexp.MustCompile(`data-testid="board-row" data-session-id="([^"]+)"`).FindAllStringSubmatch(page, -1)
	var order []string
	for _, m := range ids {
		order = append(order, m[1])
	}
	if fmt.Sprint(order) != "[b a]" {
		t.Fatalf("board rows %v, want [b a]: the running sessions, the one waiting for a person first", order)
	}
	if !strings.Contains(page, `<code>read</code>`) || !strings.Contains(page, `<code>bash</code>`) {
		t.Error("the calls in flight are not shown")
	}
	if !strings.Contains(page, `action="/sessions/b/approvals/a1"`) || !strings.Contains(page, `data-testid="board-approve"`) {
		t.Error("no inline approval form posting to the card's approval endpoint")
	}
	if !strings.Contains(page, `data-init="@get(&#39;/board/stream&#39;)"`) {
		t.Error("the board is not live")
	}
	resp, err := noRedirect.PostForm(e.ts.URL+"/sessions/b/approvals/a1", url.Values{"decision": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the board's approve: %d", resp.StatusCode)
	}
	if list := get(t, e.ts.URL+"/"); !strings.Contains(list, `data-testid="board-link"`) {
		t.Error("the list does not link the board while sessions run")
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

// BenchmarkBoardFirstPaint: GET /board with 200 running sessions, each with
// a call in flight; beside it, in the same run, GET / (the session list of
// the same sessions) as the baseline.
func BenchmarkBoardFirstPaint(b *testing.B) {
	e := newEnv(b, func(d *web.Deps) { d.Runner = &fakeRunner{} })
	for i := range 200 {
		bl := coretest.NewBuilder(t0)
		bl.TurnStart().StepStart().User("go")
		for j := range 5 {
			id := fmt.Sprintf("c%d", j)
			bl.Call(id, "read", `{"path":"a.go"}`).Result(id, "package a", false, nil, nil)
		}
		bl.Call("c9", "bash", `{"command":"sleep 100"}`)
		e.session(b, fmt.Sprintf("s%03d", i), bl.Events)
	}
	for name, path := range map[string]string{"board": "/board", "list": "/"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				resp, err := http.Get(e.ts.URL + path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n == 0 {
					b.Fatalf("GET %s: %d", path, resp.StatusCode)
				}
			}
		})
	}
}

// boardSource counts the reads the board makes: lists of sessions and
// tails of logs.
type boardSource struct {
	backend.Source
	lists, tails atomic.Int64
}

func (s *boardSource) ListSessions(ctx context.Context, q web.ListQuery) ([]web.SessionSummary, error) {
	s.lists.Add(1)
	return s.Source.ListSessions(ctx, q)
}

func (s *boardSource) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	s.tails.Add(1)
	return s.Source.EventsAfter(ctx, id, after)
}

// TestBoardStream_oneRenderPerChange: five viewers of /board/stream see
// each change, rendered once for all of them: one read of the running
// sessions per change (not one per viewer), and a session's tail read
// once, later changes taken from the commits themselves.
func TestBoardStream_oneRenderPerChange(t *testing.T) {
	var src *boardSource
	e := newEnv(t, func(d *web.Deps) {
		d.Runner = &fakeRunner{}
		src = &boardSource{Source: d.Sessions.(backend.Source)}
		d.Sessions = src
	})
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go")
	e.session(t, "a", b.Events)
	const viewers = 5
	streams := make([]*sseClient, viewers)
	for i := range streams {
		streams[i] = e.stream(t, "/board/stream")
	}
	change := func(call, tool string, check bool) {
		t.Helper()
		lists, tails := src.lists.Load(), src.tails.Load()
		n := len(b.Events)
		b.Call(call, tool, `{}`)
		e.append(t, "a", b.Events[n:]...)
		for i, s := range streams {
			evs := s.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "<code>"+tool+"</code>") })
			if check && len(evs) != 1 {
				t.Errorf("viewer %d read %d frames for one change, want 1", i, len(evs))
			}
		}
		if !check {
			return
		}
		if got := src.lists.Load() - lists; got != 1 {
			t.Errorf("call %s: %d reads of the running sessions for %d viewers, want 1 (one render per change)", call, got, viewers)
		}
		if got := src.tails.Load() - tails; got != 0 {
			t.Errorf("call %s: %d reads of the session's tail, want 0 (the commit is the tail)", call, got)
		}
	}
	// The first change (and whatever of the session's making reached the
	// board late) reads the session's tail once; the next are measured.
	change("c0", "glob", false)
	change("c1", "read", true)
	change("c2", "grep", true)
	// A result: the call before is in flight again.
	n := len(b.Events)
	b.Result("c2", "found", false, nil, nil)
	e.append(t, "a", b.Events[n:]...)
	for _, s := range streams {
		s.until(t, func(ev sseEvent) bool {
			return strings.Contains(ev.Elements(), "<code>read</code>") && !strings.Contains(ev.Elements(), "<code>grep</code>")
		})
	}
}
