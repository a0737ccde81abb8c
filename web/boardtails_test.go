package web_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/web"
)

// tailReads records every EventsAfterEach the board makes: which sessions
// it read, after which seq.
type tailReads struct {
	backend.Source
	mu    sync.Mutex
	reads []map[string]int64
}

func (s *tailReads) EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error) {
	s.mu.Lock()
	s.reads = append(s.reads, maps.Clone(after))
	s.mu.Unlock()
	return s.Source.EventsAfterEach(ctx, after)
}

// since returns the reads made after the first n.
func (s *tailReads) since(n int) []map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]int64(nil), s.reads[n:]...)
}

func (s *tailReads) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads)
}

// boardCalls returns the board's rows: session id → the call in flight
// its row shows ("" when none).
func boardCalls(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	rows := strings.Split(page, `data-testid="board-row" data-session-id="`)
	for _, r := range rows[1:] {
		id, rest, _ := strings.Cut(r, `"`)
		if i := strings.Index(rest, `data-testid="board-row"`); i >= 0 {
			rest = rest[:i]
		}
		call := ""
		if _, after, ok := strings.Cut(rest, "<code>"); ok {
			call, _, _ = strings.Cut(after, "</code>")
		}
		out[id] = call
	}
	return out
}

// TestBoard_paintReadsOnlyTheTailsThatMoved: GET /board keeps what it read
// of the running sessions' tails: a second paint with no commit reads no
// events and shows the same calls; after a commit to one session the next
// paint reads that session's events after what it knew (nothing of the
// others) and its cell shows the new call; a session whose calls were all
// answered shows none, read or not.
func TestBoard_paintReadsOnlyTheTailsThatMoved(t *testing.T) {
	var src *tailReads
	e := newEnv(t, func(d *web.Deps) {
		d.Runner = &fakeRunner{}
		src = &tailReads{Source: d.Sessions.(backend.Source)}
		d.Sessions = src
	})
	logs := map[string]*coretest.Builder{}
	for id, tool := range map[string]string{"a": "read", "b": "grep"} {
		b := openStep()
		b.Call("c-"+id, tool, `{}`)
		logs[id] = b
		e.session(t, id, b.Events)
	}
	want := map[string]string{"a": "read", "b": "grep"}
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first paint: board %v, want %v", got, want)
	}
	n := src.count()
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("second paint: board %v, want %v", got, want)
	}
	if r := src.since(n); len(r) != 0 {
		t.Errorf("a paint with no commit since the last read tails %v, want none", r)
	}

	// A commit to a: its call answered, another in flight.
	a := logs["a"]
	known := a.Events[len(a.Events)-1].Seq
	k := len(a.Events)
	a.Result("c-a", "done", false, nil, nil).Call("c-a2", "glob", `{}`)
	e.append(t, "a", a.Events[k:]...)
	n = src.count()
	want["a"] = "glob"
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after a commit to a: board %v, want %v", got, want)
	}
	if r := src.since(n); len(r) != 1 || fmt.Sprint(r[0]) != fmt.Sprint(map[string]int64{"a": known}) {
		t.Errorf("after a commit to a the paint read %v, want one read of a after seq %d", r, known)
	}

	// A commit to b answers its call: nothing in flight, known from its
	// summary without a read.
	b := logs["b"]
	k = len(b.Events)
	b.Result("c-b", "found", false, nil, nil)
	e.append(t, "b", b.Events[k:]...)
	n = src.count()
	want["b"] = ""
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after b's call was answered: board %v, want %v", got, want)
	}
	if r := src.since(n); len(r) != 0 {
		t.Errorf("after b's call was answered the paint read %v, want no read", r)
	}
}

// TestBoard_replacedOrDeletedSessionIsReadAgain: a session whose whole
// log is replaced by one as long (the same last seq, as many calls and
// results) shows the new log's call in flight on the next paint, not the
// one the board knew; a deleted session drops its row, and a session made
// again under its id shows its own call.
func TestBoard_replacedOrDeletedSessionIsReadAgain(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Runner = &fakeRunner{} })
	h := core.SessionHeader{ID: "w1", CreatedAt: t0, Cwd: "/work"}
	old := openStep()
	old.Call("c1", "read", `{}`)
	e.watched(t, h, old.Events)
	b := openStep()
	b.Call("c2", "keep", `{}`)
	e.session(t, "kept", b.Events)
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); got["w1"] != "read" || got["kept"] != "keep" {
		t.Fatalf("first paint: board %v, want w1 read, kept keep", got)
	}

	repl := openStep()
	repl.Call("c1", "grep", `{}`)
	if len(repl.Events) != len(old.Events) {
		t.Fatalf("the new log has %d events, the old %d: the test needs the same last seq", len(repl.Events), len(old.Events))
	}
	e.watched(t, h, repl.Events)
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); got["w1"] != "grep" || got["kept"] != "keep" {
		t.Errorf("after w1's log was replaced: board %v, want w1 grep (the new log), kept keep", got)
	}

	if _, err := e.store.DeleteSession(context.Background(), "kept"); err != nil {
		t.Fatal(err)
	}
	got := boardCalls(t, get(t, e.ts.URL+"/board"))
	if _, ok := got["kept"]; ok {
		t.Errorf("after kept was deleted: board %v still shows it", got)
	}
	again := openStep()
	again.Call("c2", "edit", `{}`)
	e.session(t, "kept", again.Events)
	if got := boardCalls(t, get(t, e.ts.URL+"/board")); got["kept"] != "edit" {
		t.Errorf("kept made again after its delete: board %v, want kept edit", got)
	}
}

// TestBoardStream_firstRenderStartsFromThePaint: the board's stream,
// opened after its page was painted, renders a commit without reading any
// session's tail: it starts from the tails the paint read, the commit's
// events continuing one of them; every row still shows its call.
func TestBoardStream_firstRenderStartsFromThePaint(t *testing.T) {
	var src *boardSource
	e := newEnv(t, func(d *web.Deps) {
		d.Runner = &fakeRunner{}
		src = &boardSource{Source: d.Sessions.(backend.Source)}
		d.Sessions = src
	})
	logs := map[string]*coretest.Builder{}
	for id, tool := range map[string]string{"a": "read", "b": "grep", "c": "edit"} {
		b := openStep()
		b.Call("c-"+id, tool, `{}`)
		logs[id] = b
		e.session(t, id, b.Events)
	}
	get(t, e.ts.URL+"/board")
	tails := src.tails.Load()
	s := e.stream(t, "/board/stream")
	a := logs["a"]
	k := len(a.Events)
	a.Result("c-a", "done", false, nil, nil).Call("c-a2", "glob", `{}`)
	e.append(t, "a", a.Events[k:]...)
	evs := s.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "<code>glob</code>") })
	want := map[string]string{"a": "glob", "b": "grep", "c": "edit"}
	if got := boardCalls(t, evs[len(evs)-1].Elements()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the stream's first render: board %v, want %v", got, want)
	}
	if got := src.tails.Load() - tails; got != 0 {
		t.Errorf("the stream's first render read tails %d times, want 0 (the paint read them)", got)
	}
}
