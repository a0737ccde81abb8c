package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// logSource is a minimal SessionSource over one in-memory log (package web
// cannot import the store adapters in its own tests: they import web).
type logSource struct {
	mu     sync.Mutex
	h      core.SessionHeader
	events []core.Event
}

func (s *logSource) add(typ string, data any) core.Event {
	raw, _ := json.Marshal(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	var op *core.SurfaceOp
	if core.IsSurfaceType(typ) {
		op = core.AppendOp()
	}
	e := core.Event{Type: typ, Seq: int64(len(s.events)), Time: 1000 + int64(len(s.events)), Data: raw, SurfaceOp: op}
	s.events = append(s.events, e)
	return e
}

func (s *logSource) ListSessions(context.Context, ListQuery) ([]SessionSummary, error) {
	return nil, nil
}
func (s *logSource) Summary(context.Context, string) (SessionSummary, error) {
	return SessionSummary{ID: s.h.ID}, nil
}
func (s *logSource) LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h, append([]core.Event(nil), s.events...), nil
}
func (s *logSource) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	_, ev, _ := s.LoadSession(ctx, id)
	return ev[min(int(after+1), len(ev)):], nil
}
func (s *logSource) EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error) {
	out := map[string][]core.Event{}
	for id, seq := range after {
		out[id], _ = s.EventsAfter(ctx, id, seq)
	}
	return out, nil
}
func (s *logSource) EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error) {
	h, ev, _ := s.LoadSession(ctx, id)
	return h, ev[:min(int(upTo+1), len(ev))], nil
}

func (s *logSource) CallEvents(ctx context.Context, id, callID string) (core.SessionHeader, []core.Event, error) {
	h, ev, _ := s.LoadSession(ctx, id)
	return h, views.CallContext(ev, callID), nil
}

type genericPresenter struct{}

func (genericPresenter) PresentCall(name, raw string) core.CallView {
	return &core.GenericCallView{Title: name}
}
func (genericPresenter) PresentResult(name, raw string, r core.ToolResult) core.ResultView {
	return &core.GenericResultView{Content: r.Content}
}

// TestBroker_SlowSubscriberNeverBlocksAndResyncs: a subscriber that reads
// nothing fills its bounded queue; publishing goes on; the subscriber is
// kicked, and resync + renderRange covers exactly what it missed.
func TestBroker_SlowSubscriberNeverBlocksAndResyncs(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	src.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	b := newBroker(src, genericPresenter{}, Tuning{Buffer: 2}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	ctx := context.Background()
	h, slow, at, err := b.subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if at != 1 {
		t.Fatalf("subscribed at %d, want 1", at)
	}
	_, fast, _, _ := b.subscribe(ctx, "s")

	// Publish n calls; the fast subscriber reads each frame as it comes,
	// the slow one reads nothing.
	const n = 20
	cursor := at
	for i := range n {
		id := "c" + string(rune('a'+i))
		returned := make(chan struct{})
		go func() {
			b.Publish("s", []core.Event{src.add(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: id, Name: "x", Arguments: "{}"})})
			close(returned)
		}()
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("Publish blocked on a subscriber that reads nothing")
		}
		select {
		case f := <-fast.ch:
			if f.from != cursor+1 {
				t.Fatalf("fast subscriber: frame from %d after cursor %d", f.from, cursor)
			}
			cursor = f.seq
		case <-time.After(5 * time.Second):
			t.Fatalf("fast subscriber stuck at %d", cursor)
		}
	}
	select {
	case <-slow.kick:
	case <-time.After(5 * time.Second):
		t.Fatal("slow subscriber was never told to resync")
	}
	// It read 0 frames; its cursor is still at. Resync from the log.
	upTo, _ := h.resync(slow)
	if upTo != at+n {
		t.Fatalf("resync to %d, want %d", upTo, at+n)
	}
	frames, err := b.renderRange(ctx, "s", at, upTo)
	if err != nil {
		t.Fatal(err)
	}
	// One frame, whatever it missed: each card once, in its latest state.
	if len(frames) != 1 || frames[0].from != at+1 || frames[0].seq != upTo {
		t.Fatalf("renderRange gave %d frames (%d..%d), want one", len(frames), frames[0].from, frames[len(frames)-1].seq)
	}
	for i := range n {
		id := "c" + string(rune('a'+i))
		if c := strings.Count(string(frames[0].data), `data-call-id="`+id+`"`); c != 1 {
			t.Errorf("call %s is in the catch-up frame %d times, want once", id, c)
		}
	}
	// After the resync the slow subscriber is live again.
	b.Publish("s", []core.Event{src.add(core.EventStepEnd, core.StepBoundary{Turn: 1, Step: 1})})
	select {
	case f := <-slow.ch:
		if f.from != upTo+1 {
			t.Errorf("after resync: frame from %d, want %d", f.from, upTo+1)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("slow subscriber gets nothing after resync")
	}
}

// TestBroker_GapIsRepairedFromTheLog: a hub that misses a publish fetches
// the missing events from the source before applying the next one.
func TestBroker_GapIsRepairedFromTheLog(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	src.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	b := newBroker(src, genericPresenter{}, Tuning{}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	_, sub, at, err := b.subscribe(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	src.add(core.EventToolCall, core.ToolCall{CallID: "lost", Name: "x"}) // committed, never published
	b.Publish("s", []core.Event{src.add(core.EventToolCall, core.ToolCall{CallID: "seen", Name: "x"})})
	// The frames (the hub may merge both into one) cover the lost call
	// and then the seen one, contiguously.
	next := at + 1
	var html string
	for next <= at+2 {
		select {
		case f := <-sub.ch:
			if f.from != next {
				t.Fatalf("a frame from %d, want %d", f.from, next)
			}
			next = f.seq + 1
			html += string(f.data)
		case <-time.After(5 * time.Second):
			t.Fatalf("frames up to %d, want up to %d", next-1, at+2)
		}
	}
	for _, id := range []string{"lost", "seen"} {
		if !strings.Contains(html, `data-call-id="`+id+`"`) {
			t.Errorf("the frames lack the %s call", id)
		}
	}
}

// TestFormatPatches_NoCRReachesAFrame: whatever a patch carries, the
// formatted frame has no CR (the client ends a line at one) and no other
// C0 control but LF and tab, so no text can become an SSE field.
func TestFormatPatches_NoCRReachesAFrame(t *testing.T) {
	evil := "<p>a\rdata: mode remove\r\nb\x00c\x1bd\x7fe\tf</p>"
	out := string(formatPatches([]views.Patch{{Selector: "#x\rdata: mode remove", Mode: "append", HTML: evil}, {Mode: "outer", HTML: evil}}, "7"))
	for i := 0; i < len(out); i++ {
		if c := out[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			t.Fatalf("control byte %#x at %d in %q", c, i, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if l == "data: mode remove" {
			t.Fatalf("injected field in %q", out)
		}
	}
	if !strings.Contains(out, "data: elements <p>a\ndata: elements data: mode remove\ndata: elements b\uFFFDc\uFFFDd\uFFFDe\tf</p>\n") {
		t.Errorf("CR, CRLF and controls not mapped to LF and U+FFFD: %q", out)
	}
	if sseSafe("plain <p>\ttext\n</p>") != "plain <p>\ttext\n</p>" {
		t.Error("sseSafe changed clean text")
	}
}

// stepSource blocks its first Summary until release is closed; each call
// returns the next version of the title.
type stepSource struct {
	logSource
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (s *stepSource) Summary(ctx context.Context, id string) (SessionSummary, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if n == 1 {
		close(s.entered)
		<-s.release
	}
	return SessionSummary{ID: id, Summary: core.Summary{Title: "v" + string(rune('0'+n)), Status: "running"}}, nil
}

// TestListHub_FlushesNeverOverlap: a change during a running list flush
// does not start a second flush beside it (which could deliver its newer
// row before the older one); the running flush re-arms when it ends, and
// rows arrive oldest first.
func TestListHub_FlushesNeverOverlap(t *testing.T) {
	src := &stepSource{entered: make(chan struct{}), release: make(chan struct{})}
	b := newBroker(src, genericPresenter{}, Tuning{}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	var mu sync.Mutex
	var scheduled []func()
	b.list.after = func(_ time.Duration, f func()) {
		mu.Lock()
		scheduled = append(scheduled, f)
		mu.Unlock()
	}
	pending := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(scheduled)
	}
	sub := b.list.subscribe()
	defer b.list.unsubscribe(sub)

	b.Publish("s", nil)
	if pending() != 1 {
		t.Fatalf("%d flushes scheduled, want 1", pending())
	}
	mu.Lock()
	flush := scheduled[0]
	mu.Unlock()
	first := make(chan struct{})
	go func() { flush(); close(first) }()
	<-src.entered // the first flush is reading the summary

	b.Publish("s", nil)
	if pending() != 1 {
		t.Fatalf("a second flush was scheduled while the first runs (%d scheduled)", pending())
	}
	close(src.release)
	<-first
	if pending() != 2 {
		t.Fatalf("the flush did not re-arm for the change made while it ran (%d scheduled)", pending())
	}
	mu.Lock()
	second := scheduled[1]
	mu.Unlock()
	second()
	var got []string
	for range 2 {
		select {
		case f := <-sub.ch:
			got = append(got, f.sum.Title)
		case <-time.After(5 * time.Second):
			t.Fatalf("rows %v, want 2", got)
		}
	}
	if got[0] != "v1" || got[1] != "v2" {
		t.Errorf("rows arrived as %v, want [v1 v2]", got)
	}
}

// TestRenderRange_InvisibleTailEndsWithItsID: a catch-up whose last events
// render nothing still ends with their seq as the SSE id, so the client's
// Last-Event-ID equals the stream's cursor.
func TestRenderRange_InvisibleTailEndsWithItsID(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	src.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	src.add(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "x", Arguments: "{}"})
	src.add(core.EventAssistantChunk, core.AssistantChunk{Turn: 1, Step: 1, Chunk: core.StreamChunk{Type: core.ChunkUsage}})
	src.add(core.EventAssistantChunk, core.AssistantChunk{Turn: 1, Step: 1, Chunk: core.StreamChunk{Type: core.ChunkFinish, Reason: "stop"}})
	b := newBroker(src, genericPresenter{}, Tuning{}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	frames, err := b.renderRange(context.Background(), "s", 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	// One frame: the call's card, its last patch carrying id 4.
	if len(frames) != 1 || frames[0].from != 2 || frames[0].seq != 4 {
		t.Fatalf("frames = %+v", frames)
	}
	data := string(frames[0].data)
	if !strings.Contains(data, `data-call-id="c1"`) || strings.Count(data, "\nid: ") != 1 || !strings.Contains(data, "\nid: 4\n") {
		t.Fatalf("the frame does not end with id 4:\n%s", data)
	}
	// A tail that renders nothing alone is its id alone.
	frames, err = b.renderRange(context.Background(), "s", 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].from != 3 || string(frames[0].data) != "id: 4\n\n" {
		t.Fatalf("an invisible tail = %+v", frames)
	}
}

// TestBroker_LaggingSubscriberResyncsAcrossAReplace: a subscriber that lags
// while the log is replaced misses the reset frame; its resync reports the
// new generation, so it re-renders the whole page from the new log instead
// of a range of the old one.
func TestBroker_LaggingSubscriberResyncsAcrossAReplace(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	src.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	b := newBroker(src, genericPresenter{}, Tuning{Buffer: 1}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	ctx := context.Background()
	h, slow, _, err := b.subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	_, fast, _, _ := b.subscribe(ctx, "s")
	for _, id := range []string{"old-1", "old-2"} {
		b.Publish("s", []core.Event{src.add(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: id, Name: "x", Arguments: "{}"})})
		<-fast.ch
	}
	<-slow.kick // its queue of one overflowed

	// The store replaces the log with a shorter one.
	src.mu.Lock()
	src.events = nil
	src.mu.Unlock()
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	src.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	src.add(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: "new-1", Name: "x", Arguments: "{}"})
	b.Replace("s")
	f := <-fast.ch
	if !f.reset || f.gen != 1 || f.seq != 2 || !strings.Contains(string(f.data), `id="call-new-1"`) || strings.Contains(string(f.data), "old-") {
		t.Fatalf("reset frame = reset %v gen %d seq %d: %s", f.reset, f.gen, f.seq, f.data)
	}

	upTo, gen := h.resync(slow)
	if gen == slow.gen || upTo != 2 {
		t.Fatalf("resync = (%d, gen %d), subscriber gen %d: want seq 2 of a new generation", upTo, gen, slow.gen)
	}
	page, err := b.renderPageAt(ctx, "s", upTo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="transcript"`) || !strings.Contains(string(page), "new-1") || strings.Contains(string(page), "old-") ||
		!strings.Contains(string(page), "id: 2\n") {
		t.Errorf("page from the new log = %s", page)
	}
}

// push appends a built event to the log, giving it the next seq.
func (s *logSource) push(e core.Event) core.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Seq = int64(len(s.events))
	s.events = append(s.events, e)
	return e
}

// TestHub_BurstsCoalesce: events that reach a hub faster than
// Tuning.FrameInterval are sent as few frames, each carrying every card it
// covers once, in its latest state — a batch as one frame, a run of single
// publishes as at most one frame per interval.
func TestHub_BurstsCoalesce(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	b := coretest.NewBuilder(1000)
	b.TurnStart().StepStart()
	for _, e := range b.Events {
		src.push(e)
	}
	const interval = 100 * time.Millisecond
	br := newBroker(src, genericPresenter{}, Tuning{FrameInterval: interval}.withDefaults(), slog.New(slog.DiscardHandler))
	defer br.Close()
	_, sub, at, err := br.subscribe(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	calls := func(prefix string, n int) []core.Event {
		from := len(b.Events)
		for i := range n {
			id := fmt.Sprintf("%s%d", prefix, i)
			b.Call(id, "x", "{}").Result(id, "done "+id, false, nil, nil)
		}
		var out []core.Event
		for _, e := range b.Events[from:] {
			out = append(out, src.push(e))
		}
		return out
	}
	// frames reads frames up to seq upTo and returns them joined, and how
	// many there were.
	frames := func(from, upTo int64) (string, int) {
		var html strings.Builder
		n := 0
		for next := from; next <= upTo; {
			select {
			case f := <-sub.ch:
				if f.from != next {
					t.Fatalf("a frame from %d, want %d", f.from, next)
				}
				next = f.seq + 1
				html.Write(f.data)
				n++
			case <-time.After(10 * time.Second):
				t.Fatalf("no frame up to %d (at %d)", upTo, next)
			}
		}
		return html.String(), n
	}
	checkCards := func(html, prefix string, n int) {
		t.Helper()
		for i := range n {
			id := fmt.Sprintf("%s%d", prefix, i)
			if c := strings.Count(html, `data-call-id="`+id+`"`); c != 1 {
				t.Errorf("call %s is in the frames %d times, want once", id, c)
			}
		}
		if strings.Contains(html, `data-state="pending"`) {
			t.Errorf("a card was sent pending though its result came in the same burst")
		}
	}

	batch := calls("a", 20)
	br.Publish("s", batch)
	html, n := frames(at+1, batch[len(batch)-1].Seq)
	if n != 1 {
		t.Errorf("a batch of %d events took %d frames, want 1", len(batch), n)
	}
	checkCards(html, "a", 20)

	start := time.Now()
	single := calls("b", 20)
	for _, e := range single {
		br.Publish("s", []core.Event{e})
	}
	html, n = frames(batch[len(batch)-1].Seq+1, single[len(single)-1].Seq)
	elapsed := time.Since(start)
	if most := 2 + int(elapsed/interval); n > most {
		t.Errorf("%d single publishes over %v took %d frames, want at most %d (one per %v)", len(single), elapsed, n, most, interval)
	}
	// The first of a burst goes out at once; later cards may be pending in
	// an early frame and completed in a later one, but each completed once.
	for i := range 20 {
		id := fmt.Sprintf("b%d", i)
		if c := strings.Count(html, `data-call-id="`+id+`" data-state="ok"`); c != 1 {
			t.Errorf("call %s was sent completed %d times, want once", id, c)
		}
	}
}

// TestBroker_parentsPruned: the child → parent map of live nesting holds
// the families of open pages only: a parent's entries go when its last
// hub ends, when a child commits while no page of its parent follows,
// and when the child was deleted.
func TestBroker_parentsPruned(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "p"}}
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	b := newBroker(src, genericPresenter{}, Tuning{}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	// Every child is deleted (the streams' own readers nest none).
	b.child = func(id string) (*views.ChildLog, error) {
		return nil, core.Errorf(core.CodeNotFound, "session %s not found", id)
	}
	size := func() (int, int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.parents), len(b.nests)
	}

	// A page rendered p (no stream): the next commit of its child prunes it.
	b.watchChildren("p", []string{"k1", "k2"})
	if n, m := size(); n != 2 || m != 1 {
		t.Fatalf("after watching: %d children, %d parents", n, m)
	}
	b.childChanged("k1")
	if n, m := size(); n != 0 || m != 0 {
		t.Errorf("a child's commit with no page of its parent open left %d children, %d parents", n, m)
	}

	// A stream follows p: its entries stay while it does, and go with it.
	h, sub, _, err := b.subscribe(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	b.watchChildren("p", []string{"k1"})
	b.childChanged("k1")
	if n, _ := size(); n != 1 {
		t.Errorf("an open parent lost its child: %d", n)
	}
	b.unsubscribe(h, sub)
	if n, m := size(); n != 0 || m != 0 {
		t.Errorf("the parent's last stream ended, %d children and %d parents remain", n, m)
	}

	// A deleted child: the hub that finds it gone forgets it.
	h2, sub2, _, err := b.subscribe(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer b.unsubscribe(h2, sub2)
	b.watchChildren("p", []string{"k1", "k2"})
	idle := &hub{b: b, id: "p", ctx: context.Background(), tl: b.timeline(src.h)}
	idle.tl.SetReader(views.Reader{Children: map[string]*views.ChildLog{"k1": {}, "k2": {}}})
	idle.rereadChildren(map[string]bool{"k1": true})
	b.mu.Lock()
	_, k1 := b.parents["k1"]
	_, k2 := b.parents["k2"]
	b.mu.Unlock()
	if k1 || !k2 {
		t.Errorf("after k1's deletion: k1 watched %v (want false), k2 watched %v (want true)", k1, k2)
	}
}
