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
	"prism/store"
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

// BenchmarkBoardFirstPaint: GET /board with 100 and 1,000 running
// sessions (the board shows boardLimit of them), each with a call in
// flight; beside it, in the same run, GET / (the session list of the same
// sessions) as the baseline. "board" paints a board whose sessions did
// not change since the last paint; "board-moved" one where every tenth
// session committed since (its call answered, another in flight);
// "board-cold" one where every session's log was reported replaced since
// (as on a server's first paint: every tail is read).
func BenchmarkBoardFirstPaint(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			e := newEnv(b, func(d *web.Deps) { d.Runner = &fakeRunner{} })
			logs := make([]*coretest.Builder, n)
			for i := range n {
				bl := coretest.NewBuilder(t0)
				bl.TurnStart().StepStart().User("go")
				for j := range 5 {
					id := fmt.Sprintf("c%d", j)
					bl.Call(id, "read", `{"path":"a.go"}`).Result(id, "package a", false, nil, nil)
				}
				bl.Call("c9", "bash", `{"command":"sleep 100"}`)
				e.session(b, fmt.Sprintf("s%04d", i), bl.Events)
				logs[i] = bl
			}
			open := make([]string, n) // each session's call in flight
			for i := range open {
				open[i] = "c9"
			}
			moves := 0
			before := map[string]func(b *testing.B){
				"board-moved": func(b *testing.B) {
					for i := moves % 10; i < n; i += 10 {
						bl, k := logs[i], len(logs[i].Events)
						next := fmt.Sprintf("m%d", moves)
						bl.Result(open[i], "done", false, nil, nil).Call(next, "bash", `{"command":"sleep 1"}`)
						open[i] = next
						e.append(b, fmt.Sprintf("s%04d", i), bl.Events[k:]...)
					}
					moves++
				},
				"board-cold": func(*testing.B) {
					for i := range n {
						e.feed.Publish(store.Commit{SessionID: fmt.Sprintf("s%04d", i), Replaced: true, Local: true})
					}
				},
			}
			for _, name := range []string{"board", "board-moved", "board-cold", "list"} {
				path := map[string]string{"list": "/"}[name]
				if path == "" {
					path = "/board"
				}
				paint := func(b *testing.B) {
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
				b.Run(name, func(b *testing.B) {
					paint(b) // the server's first paint is not measured
					b.ReportAllocs()
					for b.Loop() {
						if f := before[name]; f != nil {
							b.StopTimer()
							f(b)
							b.StartTimer()
						}
						paint(b)
					}
				})
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

// EventsAfterEach counts one read however many sessions' tails it reads.
func (s *boardSource) EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error) {
	s.tails.Add(1)
	return s.Source.EventsAfterEach(ctx, after)
}

// TestBoard_firstPaintReadsTheTailsOnce: GET /board with several running
// sessions, each with a call in flight, reads their tails in one read of
// the store (not one per session) and still shows each one's call.
func TestBoard_firstPaintReadsTheTailsOnce(t *testing.T) {
	var src *boardSource
	e := newEnv(t, func(d *web.Deps) {
		d.Runner = &fakeRunner{}
		src = &boardSource{Source: d.Sessions.(backend.Source)}
		d.Sessions = src
	})
	tools := []string{"read", "grep", "glob", "bash", "edit"}
	for i, tool := range tools {
		b := coretest.NewBuilder(t0)
		b.TurnStart().StepStart().User("go")
		for j := range i * 20 { // tails of different lengths, some longer than the board reads
			id := fmt.Sprintf("d%d", j)
			b.Call(id, "write", `{}`).Result(id, "ok", false, nil, nil)
		}
		b.Call("c"+tool, tool, `{}`)
		e.session(t, "s-"+tool, b.Events)
	}
	done := coretest.NewBuilder(t0)
	done.TurnStart().StepStart().User("go").Call("c1", "write", `{}`).Result("c1", "ok", false, nil, nil)
	e.session(t, "s-answered", done.Events) // running, nothing in flight: no read needed
	tails := src.tails.Load()
	page := get(t, e.ts.URL+"/board")
	if got := src.tails.Load() - tails; got != 1 {
		t.Errorf("GET /board read the running sessions' tails %d times, want once for all %d", got, len(tools))
	}
	for _, tool := range tools {
		if !strings.Contains(page, "<code>"+tool+"</code>") {
			t.Errorf("the board does not show session s-%s's call in flight (%s)", tool, tool)
		}
	}
	if strings.Contains(page, "<code>write</code>") {
		t.Error("the board shows an answered call as in flight")
	}
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

// BenchmarkBoardLiveCommit: the board's live update per commit with 100
// running sessions, each with a call in flight: each op commits to one
// session (round-robin) its call's result and a new call with its own
// tool name, and waits until the one viewer of /board/stream is sent the
// board showing that call. Beside it, "commit-only" makes the same
// commits with no viewer (the board renders nothing): the difference is
// what the board costs per commit.
func BenchmarkBoardLiveCommit(b *testing.B) {
	const n = 100
	for _, name := range []string{"board-stream", "commit-only"} {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, func(d *web.Deps) { d.Runner = &fakeRunner{} })
			logs := make([]*coretest.Builder, n)
			open := make([]string, n)
			for i := range n {
				bl := coretest.NewBuilder(t0)
				bl.TurnStart().StepStart().User("go")
				for j := range 5 {
					id := fmt.Sprintf("c%d", j)
					bl.Call(id, "read", `{"path":"a.go"}`).Result(id, "package a", false, nil, nil)
				}
				bl.Call("c9", "bash", `{"command":"sleep 100"}`)
				e.session(b, fmt.Sprintf("s%04d", i), bl.Events)
				logs[i], open[i] = bl, "c9"
			}
			var sc *sseClient
			if name == "board-stream" {
				sc = e.stream(b, "/board/stream") // sent a render per change, none before
			}
			op := 0
			commit := func(b *testing.B) {
				i := op % n
				bl, k := logs[i], len(logs[i].Events)
				call, tool := fmt.Sprintf("m%d", op), fmt.Sprintf("t%d", op)
				bl.Result(open[i], "done", false, nil, nil).Call(call, tool, `{}`)
				open[i] = call
				e.append(b, fmt.Sprintf("s%04d", i), bl.Events[k:]...)
				if sc != nil {
					sc.until(b, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "<code>"+tool+"</code>") })
				}
				op++
			}
			commit(b) // the board's first render (every tail read) is not measured
			b.ReportAllocs()
			for b.Loop() {
				commit(b)
			}
		})
	}
}
