package web_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/web"
)

func openStep() *coretest.Builder {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go")
	return b
}

func TestStream_PendingThenCompletedCard(t *testing.T) {
	e := newEnv(t, nil)
	b := openStep()
	e.session(t, "s1", b.Events)
	sc := e.stream(t, "/sessions/s1/stream?after=2")
	if ct := sc.res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if got := sc.res.Header.Get("X-Accel-Buffering"); got != "no" {
		t.Errorf("X-Accel-Buffering = %q", got)
	}
	b.Call("c1", "bash", `{"command":"make"}`)
	e.append(t, "s1", b.Events[3])

	evs := sc.until(t, func(ev sseEvent) bool { return ev.ID == "3" })
	last := evs[len(evs)-1]
	if last.Type != "datastar-patch-elements" || last.field("mode") != "append" || last.field("selector") != "#step-1-items" {
		t.Fatalf("pending patch = %+v", last)
	}
	pending := cards(last.Elements())
	if len(pending) != 1 || !strings.Contains(pending["call-c1"], `data-state="pending"`) {
		t.Fatalf("pending patch cards = %v", pending)
	}

	b.Result("c1", "done", false, nil, nil)
	e.append(t, "s1", b.Events[4])
	evs = sc.until(t, func(ev sseEvent) bool { return ev.ID == "4" })
	var done map[string]string
	for _, ev := range evs {
		if c := cards(ev.Elements()); c["call-c1"] != "" {
			done = c
			if ev.field("selector") != "" || ev.field("mode") != "" {
				t.Errorf("completed card is not an outer morph by id: %+v", ev)
			}
		}
	}
	if !strings.Contains(done["call-c1"], `data-state="ok"`) {
		t.Fatalf("completed patch = %v", done)
	}
}

// streamCards connects with the given cursor and collects card HTML until
// the event with id lastID.
func streamCards(t *testing.T, e *env, path string, lastID string, hdr ...string) (map[string]string, []string) {
	t.Helper()
	sc := e.stream(t, path, hdr...)
	got := map[string]string{}
	var ids []string
	for _, ev := range sc.until(t, func(ev sseEvent) bool { return ev.ID == lastID }) {
		for id, c := range cards(ev.Elements()) {
			got[id] = c
		}
		if ev.ID != "" {
			ids = append(ids, ev.ID)
		}
	}
	sc.cancel()
	return got, ids
}

func TestStream_ResumeSendsExactlyTheMissingEvents(t *testing.T) {
	e := newEnv(t, nil)
	b := openStep()
	for i := range 6 {
		id := "c" + string(rune('0'+i))
		b.Call(id, "note", `{}`).Result(id, "ok", false, nil, nil)
	}
	b.StepEnd().TurnEnd(core.TurnCompleted)
	e.session(t, "s1", b.Events)
	last := b.Events[len(b.Events)-1].Seq
	lastID := itoa(last)

	for _, tc := range []struct {
		name string
		path string
		hdr  []string
	}{
		{"last-event-id", "/sessions/s1/stream?after=0", []string{"Last-Event-ID", "8"}},
		{"after", "/sessions/s1/stream?after=8", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ids := streamCards(t, e, tc.path, lastID, tc.hdr...)
			// Events 0–8 hold calls c0..c2 (seq 3..8); the stream must send
			// c3..c5 only, each once, in order, then the closers.
			for _, id := range []string{"call-c0", "call-c1", "call-c2"} {
				if got[id] != "" {
					t.Errorf("resent %s, which the page already had", id)
				}
			}
			for _, id := range []string{"call-c3", "call-c4", "call-c5"} {
				if !strings.Contains(got[id], `data-state="ok"`) {
					t.Errorf("missing or not completed: %s = %q", id, got[id])
				}
			}
			prev := int64(8)
			for _, id := range ids {
				n := seqOf(sseEvent{ID: id})
				if n <= prev {
					t.Errorf("event ids not increasing after the cursor: %v", ids)
					break
				}
				prev = n
			}
		})
	}
}

// failingSource fails EventsUpTo, the read a resuming stream makes after it
// opened.
type failingSource struct{ backend.Source }

func (failingSource) EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error) {
	return core.SessionHeader{}, nil, errors.New("disk on fire")
}

func TestStream_ErrorAfterOpenIsReportedInside(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) {
		d.Sessions = failingSource{d.Sessions.(backend.Source)}
	})
	b := openStep()
	e.session(t, "s1", b.Events)
	sc := e.stream(t, "/sessions/s1/stream?after=-1")
	if sc.res.StatusCode != 200 {
		t.Fatalf("status = %d", sc.res.StatusCode)
	}
	ev := sc.next(t)
	if !strings.Contains(ev.Elements(), `id="stream-status"`) || !strings.Contains(ev.Elements(), "internal error") {
		t.Fatalf("error event = %+v", ev)
	}
	if strings.Contains(ev.Elements(), "disk on fire") {
		t.Error("internal error detail leaked to the client")
	}
}

func TestStream_UnknownSessionIs404BeforeStreaming(t *testing.T) {
	e := newEnv(t, nil)
	res, body := e.get(t, "/sessions/nope/stream")
	if res.StatusCode != 404 || strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %q, body %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}

func TestListStream_NewSessionsAndStatusChanges(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.ListThrottle = 1 })
	e.session(t, "old", nil)
	sc := e.stream(t, "/stream")
	first := sc.next(t)
	if !strings.Contains(first.Elements(), `<tbody id="session-rows">`) || !strings.Contains(first.Elements(), `data-session-id="old"`) {
		t.Fatalf("first list event = %+v", first)
	}
	e.session(t, "new", nil)
	ev := sc.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-session-id="new"`) })
	if got := ev[len(ev)-1]; got.field("mode") != "prepend" || got.field("selector") != "#session-rows" {
		t.Errorf("new row patch = %+v", got)
	}
	b := coretest.NewBuilder(t0)
	b.TurnStart()
	e.append(t, "new", b.Events...)
	ev = sc.until(t, func(ev sseEvent) bool {
		return strings.Contains(ev.Elements(), `data-session-id="new"`) && strings.Contains(ev.Elements(), `data-status="running"`)
	})
	if got := ev[len(ev)-1]; got.field("mode") != "" {
		t.Errorf("a known row must be morphed, got mode %q", got.field("mode"))
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}

// TestStream_ChunksAreCoalesced: a token stream does not become a patch per
// token; the streamed text arrives and the final message replaces it.
func TestStream_ChunksAreCoalesced(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.Coalesce = 20 * time.Millisecond })
	b := openStep()
	e.session(t, "s1", b.Events)
	sc := e.stream(t, "/sessions/s1/stream?after=2")
	words := make([]string, 200)
	for i := range words {
		words[i] = "w" + itoa(int64(i)) + " "
	}
	b.Chunks(words...)
	e.append(t, "s1", b.Events[3:]...)
	last := b.Events[len(b.Events)-1].Seq
	evs := sc.until(t, func(ev sseEvent) bool { return ev.ID == itoa(last) })
	if len(evs) >= 50 {
		t.Errorf("%d patches for 201 chunk events: not coalesced", len(evs))
	}
	if !strings.Contains(evs[len(evs)-1].Elements(), "w199 ") {
		t.Errorf("last patch lacks the streamed text: %.200s", evs[len(evs)-1].Elements())
	}
	b.Assistant(strings.Join(words, ""))
	e.append(t, "s1", b.Events[len(b.Events)-1])
	ev := sc.until(t, func(ev sseEvent) bool { return ev.ID == itoa(last+1) })
	if !strings.Contains(ev[len(ev)-1].Elements(), `data-final="true"`) || ev[len(ev)-1].field("mode") != "" {
		t.Errorf("final message is not a morph of the streamed item: %+v", ev[len(ev)-1])
	}
}

// countingSource counts the reads a stream makes to re-render from the log.
type countingSource struct {
	backend.Source
	reads atomic.Int64
}

func (c *countingSource) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	c.reads.Add(1)
	return c.Source.EventsAfter(ctx, id, after)
}

func (c *countingSource) EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error) {
	c.reads.Add(1)
	return c.Source.EventsUpTo(ctx, id, upTo)
}

// TestStream_InvisibleEventsMoveTheCursorWithoutAResync: chunks that render
// nothing (usage, finish, tool-call deltas) still advance the stream's
// cursor — an id-only event — so the next visible change is sent live,
// without re-reading the log.
func TestStream_InvisibleEventsMoveTheCursorWithoutAResync(t *testing.T) {
	var src *countingSource
	e := newEnv(t, func(d *web.Deps) {
		src = &countingSource{Source: d.Sessions.(backend.Source)}
		d.Sessions = src
	})
	b := openStep()
	e.session(t, "s1", b.Events)
	sc := e.stream(t, "/sessions/s1/stream?after=2")
	b.Call("c1", "note", `{}`)
	e.append(t, "s1", b.Events[3])
	sc.until(t, func(ev sseEvent) bool { return ev.ID == "3" })
	src.reads.Store(0) // the stream is live now

	zero := 0
	args := `{"ti`
	for _, ch := range []core.StreamChunk{
		{Type: core.ChunkToolCallDelta, Index: &zero, ID: "c2", Name: "note", ArgumentsDelta: &args},
		{Type: core.ChunkUsage, Usage: &core.TokenUsage{InputTokens: 10, OutputTokens: 2}},
		{Type: core.ChunkFinish, Reason: "tool-calls"},
	} {
		ev := b.Add(core.EventAssistantChunk, core.AssistantChunk{Turn: 1, Step: 1, Chunk: ch}, nil)
		e.append(t, "s1", *ev)
		// Each chunk's (empty) coalesced update is flushed by the timer
		// or by the next event; either way its seq must reach the client.
	}
	b.Call("c2", "note", `{}`)
	last := b.Events[len(b.Events)-1]
	e.append(t, "s1", last)
	evs := sc.until(t, func(ev sseEvent) bool { return cards(ev.Elements())["call-c2"] != "" })
	if n := src.reads.Load(); n != 0 {
		t.Errorf("%d reads of the log during the live phase, want 0 (a resync)", n)
	}
	if got := evs[len(evs)-1].ID; got != itoa(last.Seq) {
		t.Errorf("the card's event id = %q, want %d", got, last.Seq)
	}
	// Every event id the client saw increases: the invisible chunks moved
	// the cursor (as id-only events, or merged into the card's frame).
	prev := int64(3)
	for _, ev := range evs {
		if ev.ID == "" {
			continue
		}
		if n := seqOf(ev); n <= prev {
			t.Errorf("event id %d after %d", n, prev)
		} else {
			prev = n
		}
	}
}

// rest reads the stream to its end, failing if it does not end within 5 s.
func (c *sseClient) rest(t *testing.T) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("the stream did not end (read %d events)", len(got))
		}
	}
}

// TestStream_CloseEndsOpenStreams: Server.Close ends the open session and
// list streams, each after telling the page.
func TestStream_CloseEndsOpenStreams(t *testing.T) {
	e := newEnv(t, nil)
	b := openStep()
	e.session(t, "s1", b.Events)
	sc := e.stream(t, "/sessions/s1/stream?after=2")
	b.Call("c1", "note", `{}`)
	e.append(t, "s1", b.Events[3])
	sc.until(t, func(ev sseEvent) bool { return ev.ID == "3" }) // live
	lc := e.stream(t, "/stream")
	lc.next(t) // the list body

	e.srv.Close()
	for name, c := range map[string]*sseClient{"session": sc, "list": lc} {
		evs := c.rest(t)
		if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Elements(), "live updates stopped") {
			t.Errorf("%s stream ended without saying why: %+v", name, evs)
		}
	}
}

// TestServe_ShutdownEndsOpenStreams: when Serve's context ends, open
// streams end with it, so the graceful shutdown does not wait them out.
func TestServe_ShutdownEndsOpenStreams(t *testing.T) {
	st, feed := openStore(t)
	srv := web.New(web.Deps{Sessions: backend.Source{Store: st}, Commits: feed, Presenter: presenters(t)})
	defer srv.Close()
	if err := st.CreateSession(context.Background(), core.SessionHeader{ID: "s1", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	e := &env{url: "http://" + ln.Addr().String(), hc: &http.Client{}, store: st, feed: feed, srv: srv}
	sc := e.stream(t, "/stream")
	sc.next(t)
	cancel()
	sc.rest(t)
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want a clean shutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}
