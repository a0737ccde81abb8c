package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
	"prism/web"
)

// cardState is what the at-seq tests compare of each card: its call id,
// its state and its whole markup.
type cardState struct {
	CallID, State, HTML string
}

// pageCards returns the tool cards of a page or patch, by element id, and
// fails when an id appears twice.
func pageCards(t *testing.T, html string) map[string]cardState {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cardState{}
	d.Find(`[data-testid="tool-card"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("id")
		call, _ := s.Attr("data-call-id")
		state, _ := s.Attr("data-state")
		h, _ := goquery.OuterHtml(s)
		if _, dup := out[id]; dup {
			t.Errorf("card %s appears twice", id)
		}
		out[id] = cardState{call, state, h}
	})
	return out
}

// headStats returns the header's counters.
func headStats(t *testing.T, html string) map[string]string {
	t.Helper()
	d := doc(t, html)
	out := map[string]string{}
	for _, k := range []string{"stat-turns", "stat-calls", "stat-pending", "stat-errors", "stat-tokens"} {
		out[k] = d.Find(`[data-testid="` + k + `"]`).Text()
	}
	out["status"], _ = d.Find(`#session-status`).Attr("data-status")
	return out
}

// atSession is the scripted session the at-seq tests run over: the demo
// (every card kind and failure class) and a turn closed by crash repair
// (an interrupted call).
func atSession(t testing.TB) []core.Event {
	demo := demoEvents(t)
	b := coretest.NewBuilder(demo[len(demo)-1].Time + 10)
	b.Events = append([]core.Event(nil), demo...)
	b.TurnStart().StepStart().User("once more").Call("k1", "bash", `{"command":"make"}`).Call("k2", "note", `{"title":"t"}`)
	b.Result("k2", "noted", false, nil, nil)
	b.Repair()
	return b.Events
}

// TestAtSeq_EqualsTheLivePageAtEveryEvent: for every seq N of a scripted
// session, the page at N (?at=N) shows the cards — each one's call id,
// state and markup — and the counters of the live page captured when the
// session had N+1 events, and the scrubber's move to N (the seek patch)
// shows the same cards.
func TestAtSeq_EqualsTheLivePageAtEveryEvent(t *testing.T) {
	events := atSession(t)
	wide := func(d *web.Deps) { d.Tuning.Window = 100000 }
	live := newEnv(t, wide)
	live.session(t, "s", nil)
	type capture struct {
		cards map[string]cardState
		stats map[string]string
	}
	caps := make([]capture, len(events))
	for i, ev := range events {
		live.append(t, "s", ev)
		_, page := live.get(t, "/sessions/s")
		caps[i] = capture{pageCards(t, page), headStats(t, page)}
	}

	e := newEnv(t, wide)
	e.session(t, "s", events)
	last := events[len(events)-1].Seq
	seenPending, seenStopped := false, false
	for n := int64(0); n <= last; n++ {
		res, page := e.get(t, views.SessionAtURL("s", n))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("at %d: %d", n, res.StatusCode)
		}
		got, want := pageCards(t, page), caps[n]
		if diff := cmp.Diff(want.cards, got); diff != "" {
			t.Fatalf("at %d: cards differ from the live page at %d events (-live +at):\n%s", n, n+1, diff)
		}
		if diff := cmp.Diff(want.stats, headStats(t, page)); diff != "" {
			t.Errorf("at %d: counters differ (-live +at):\n%s", n, diff)
		}
		d := doc(t, page)
		if got := d.Find(`[data-testid="at-seq"]`).Text() + "/" + d.Find(`[data-testid="at-of"]`).Text(); got != itoa(n)+"/"+itoa(last) {
			t.Errorf("at %d: header says at event %s", n, got)
		}
		if _, ok := d.Find("#stream").Attr("data-init"); ok {
			t.Errorf("at %d: the page opens a stream", n)
		}
		for _, c := range got {
			seenPending = seenPending || c.State == views.StatePending
			seenStopped = seenStopped || c.State == views.StateStopped
		}

		// The scrubber at n: the seek patch morphs the same cards in.
		sc := e.stream(t, views.SeekURL("s", views.Place{At: n, Event: -1}))
		var html strings.Builder
		for ev := range sc.events {
			html.WriteString(ev.Elements())
		}
		if diff := cmp.Diff(want.cards, pageCards(t, html.String())); diff != "" {
			t.Fatalf("seek to %d: cards differ from the live page (-live +seek):\n%s", n, diff)
		}
	}
	if !seenPending || !seenStopped {
		t.Errorf("the session never showed a pending (%v) or a stopped (%v) card at an event", seenPending, seenStopped)
	}
}

// TestAt_BadValues: a bad at is a 400 that names it; one past the last
// event is the live page; the banner is there only at an event.
func TestAt_BadValues(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "s", atSession(t))
	_, live := e.get(t, "/sessions/s")
	last := doc(t, live).Find("#session-status").AttrOr("data-last-seq", "")
	for _, tc := range []struct {
		at     string
		status int
		want   string
	}{
		{"abc", 400, `at must be an event's seq (a whole number from 0), not "abc"`},
		{"-1", 400, `not "-1"`},
		{"1.5", 400, `not "1.5"`},
		{"99999", 400, "at 99999 is past the end of the session: its last event is " + last},
		{"0", 200, ""},
	} {
		res, body := e.get(t, "/sessions/s?at="+url.QueryEscape(tc.at))
		if msg := doc(t, body).Find(`[data-testid="error-page"] p`).First().Text(); res.StatusCode != tc.status || !strings.Contains(msg, tc.want) {
			t.Errorf("at=%s: %d, want %d with %q: %.300s", tc.at, res.StatusCode, tc.status, tc.want, body)
		}
	}
	n, _ := new(big).set(last)
	res, body := e.get(t, "/sessions/s?at="+itoa(n+1))
	d := doc(t, body)
	if res.StatusCode != 200 || d.Find("#at-banner[hidden]").Length() != 1 || d.Find("#stream[data-init]").Length() != 1 {
		t.Errorf("one past the last event is not the live page: %d, banner hidden %d, stream %d", res.StatusCode,
			d.Find("#at-banner[hidden]").Length(), d.Find("#stream[data-init]").Length())
	}
	// JSON clients get the same message.
	req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/sessions/s?at=x", nil)
	req.Header.Set("Accept", "application/json")
	r2, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != 400 || !strings.Contains(string(b), `"code":"INVALID"`) {
		t.Errorf("JSON: %d %s", r2.StatusCode, b)
	}
}

// big parses a decimal seq (a test helper for strings the page carries).
type big struct{}

func (big) set(s string) (int64, bool) {
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, s != ""
}

// rawStream reads an SSE response into its event blocks, byte for byte,
// keep-alive comments left out; the stream closes when the test ends.
func rawStream(t *testing.T, e *env, path string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base()+path, nil)
	res, err := e.client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	blocks := make(chan string, 1<<14)
	go func() {
		defer close(blocks)
		r := bufio.NewReaderSize(res.Body, 1<<16)
		var cur bytes.Buffer
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch {
			case line == "\n":
				if cur.Len() > 0 {
					blocks <- cur.String()
				}
				cur.Reset()
			case !strings.HasPrefix(line, ":"):
				cur.WriteString(line)
			}
		}
	}()
	return blocks
}

// blocksUntil reads blocks until one contains mark, returning them all.
func blocksUntil(t *testing.T, blocks <-chan string, mark string) []string {
	t.Helper()
	var out []string
	timeout := time.After(60 * time.Second)
	for {
		select {
		case b, ok := <-blocks:
			if !ok {
				t.Fatalf("the stream ended before %q (%d events)", mark, len(out))
			}
			out = append(out, b)
			if strings.Contains(b, mark) {
				return out
			}
		case <-timeout:
			t.Fatalf("no %q within 60s (%d events)", mark, len(out))
		}
	}
}

var sseID = regexp.MustCompile(`(?m)^id: (\d+)$`)

// TestPlayback_FramesEqualLiveFrames: with chunk coalescing off (it depends
// on timing) and the events committed one frame apart, the frames a playback sends for a session's events are the
// frames the live path sent as they were committed, byte for byte; the
// playback adds only the page's position after each.
func TestPlayback_FramesEqualLiveFrames(t *testing.T) {
	events := atSession(t)
	lastID := "id: " + itoa(events[len(events)-1].Seq) + "\n"
	e := newEnv(t, func(d *web.Deps) {
		d.Tuning.Coalesce = -1
		d.Tuning.PlaybackIdle = time.Millisecond
	})
	// The session starts with its first event: the stream renders it from
	// the log after it has subscribed to the hub, so every later event
	// reaches it live.
	e.session(t, "s", events[:1])
	stream := rawStream(t, e, "/sessions/s/stream?after=-1")
	blocksUntil(t, stream, "id: 0\n")
	// Each event is appended once the frame of the one before it arrived:
	// the hub merges a burst into one frame (Tuning.FrameInterval), and
	// this compares one frame per event.
	var live []string
	for _, ev := range events[1:] {
		e.append(t, "s", ev)
		live = append(live, blocksUntil(t, stream, "id: "+itoa(ev.Seq)+"\n")...)
	}

	for _, speed := range []int{50, 10, 1} {
		stream := rawStream(t, e, views.PlayURL("s", 0, speed))
		played := blocksUntil(t, stream, lastID)
		// After the last frame, its position.
		played = append(played, blocksUntil(t, stream, `"ttAt":`+itoa(events[len(events)-1].Seq))...)
		var frames []string
		positions := 0
		for _, b := range played {
			if strings.HasPrefix(b, "event: datastar-patch-signals\n") {
				positions++
				continue
			}
			frames = append(frames, b)
		}
		if diff := cmp.Diff(live, frames); diff != "" {
			t.Fatalf("speed %d: playback frames differ from the live frames (-live +playback):\n%s", speed, diff)
		}
		if updates := len(sseID.FindAllString(strings.Join(frames, ""), -1)); positions != updates+1 {
			t.Errorf("speed %d: %d position signals for %d updates (want one first, then one after each)", speed, positions, updates)
		}
		if len(sseID.FindAllString(strings.Join(frames, ""), -1)) != len(events)-1 {
			t.Errorf("speed %d: %d frames with ids for %d events (coalescing is off)", speed, len(frames), len(events))
		}
	}
}

// callIDs returns the call ids of a log's tool/call events, in order.
func callIDs(t testing.TB, events []core.Event) []string {
	t.Helper()
	var ids []string
	for i := range events {
		if events[i].Type == core.EventToolCall {
			var d core.ToolCall
			if err := json.Unmarshal(events[i].Data, &d); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.CallID)
		}
	}
	return ids
}

// TestJump_10kSession: in a 10,000-event session, ?call= for the first, a
// middle and the last call renders the window around that card with the
// card marked aria-current="true"; the projections page's back link lands
// on its card; ?event= does the same for any event; the window grows both
// ways from there; an unknown call or event is a 404 naming it.
func TestJump_10kSession(t *testing.T) {
	e := newEnv(t, nil)
	events := bigSession(10000)
	e.session(t, "big", events)
	ids := callIDs(t, events)
	for _, id := range []string{ids[0], ids[len(ids)/2], ids[len(ids)-1]} {
		res, page := e.get(t, views.SessionCallURL("big", id, ""))
		if res.StatusCode != 200 {
			t.Fatalf("?call=%s: %d", id, res.StatusCode)
		}
		d := doc(t, page)
		cur := d.Find(`[aria-current="true"]`)
		if cur.Length() != 1 || cur.AttrOr("data-call-id", "") != id || cur.AttrOr("id", "") != views.CallElemID(id) {
			t.Errorf("?call=%s: current elements %d, call %q", id, cur.Length(), cur.AttrOr("data-call-id", ""))
		}
		n := d.Find(`[data-testid="tool-card"]`).Length()
		if n < 10 || n > views.DefaultWindow {
			t.Errorf("?call=%s: %d cards in the window", id, n)
		}
		earlier, later := d.Find(`[data-testid="load-earlier"]`).Length(), d.Find(`[data-testid="load-later"]`).Length()
		switch id {
		case ids[0]:
			if earlier != 0 || later != 1 {
				t.Errorf("first call: earlier %d, later %d loaders", earlier, later)
			}
		case ids[len(ids)-1]:
			if earlier != 1 || later != 0 {
				t.Errorf("last call: earlier %d, later %d loaders", earlier, later)
			}
		default:
			if earlier != 1 || later != 1 {
				t.Errorf("middle call: earlier %d, later %d loaders", earlier, later)
			}
			// The window grows later: the loader fills its placeholder
			// with the cards that follow, none of them already shown.
			expr := d.Find(`[data-testid="load-later"]`).AttrOr("data-on:click", "")
			m := regexp.MustCompile(`@get\('([^']+)'\)`).FindStringSubmatch(expr)
			if m == nil {
				t.Fatalf("load-later expression = %q", expr)
			}
			ev := e.stream(t, m[1]).next(t)
			more := pageCards(t, ev.Elements())
			if len(more) == 0 || !strings.Contains(ev.Elements(), `class="later loaded"`) {
				t.Errorf("later patch: %d cards: %.200s", len(more), ev.Elements())
			}
			shown := pageCards(t, page)
			for k := range more {
				if _, dup := shown[k]; dup {
					t.Errorf("later patch repeats card %s", k)
				}
			}
		}

		// The projections page's back link lands on the card.
		_, call := e.get(t, views.CallURL("big", id, ""))
		back := doc(t, call).Find(`[data-testid="back-to-session"]`).AttrOr("href", "")
		_, landed := e.get(t, back)
		if got := doc(t, landed).Find(`[aria-current="true"]`).AttrOr("data-call-id", ""); got != id || !strings.HasSuffix(back, "#"+views.CallElemID(id)) {
			t.Errorf("back link %q lands on %q, want %q", back, got, id)
		}
	}

	// Any event: a user message in the middle.
	var msg int64 = -1
	for i := len(events) / 2; i < len(events); i++ {
		if events[i].Type == core.EventUserMessage {
			msg = events[i].Seq
			break
		}
	}
	_, page := e.get(t, views.SessionEventURL("big", msg))
	if got := doc(t, page).Find(`[aria-current="true"]`); got.AttrOr("id", "") != "ev-"+itoa(msg) || got.AttrOr("data-testid", "") != "user-message" {
		t.Errorf("?event=%d marks %q", msg, got.AttrOr("id", ""))
	}

	for path, want := range map[string]string{
		views.SessionCallURL("big", "no-such-call", ""):         `the session has no call "no-such-call"`,
		views.SessionCallURL("big", ids[0], "call-nope"):        `call "` + ids[0] + `" has no card "call-nope"`,
		views.SessionEventURL("big", 10000):                     "the session has no event 10000: its last is 9999",
		views.Place{At: 5, Call: ids[50], Event: -1}.URL("big"): `the session has no call "` + ids[50] + `" at event 5`,
	} {
		res, body := e.get(t, path)
		if msg := doc(t, body).Find(`[data-testid="error-page"] p`).First().Text(); res.StatusCode != 404 || msg != want {
			t.Errorf("%s: %d %q, want 404 %q", path, res.StatusCode, msg, want)
		}
	}
	res, _ := e.get(t, "/sessions/big?event=x")
	if res.StatusCode != 400 {
		t.Errorf("?event=x: %d", res.StatusCode)
	}
}

// signalsQuery is the datastar parameter a page at seq at sends.
func signalsQuery(at int64) string {
	return "datastar=" + url.QueryEscape(`{"ttAt":`+itoa(at)+`,"ttMode":"at"}`)
}

// TestSeek_StepsAndPause: the transport's moves from the seq the page
// holds (its ttAt signal): a short move forward is the live path's frames
// for those events, a move back re-renders the page at the new seq, a
// chapter mark lands on its card, nothing that way leaves the page where it
// is, and a pause only says where the page stands.
func TestSeek_StepsAndPause(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.Coalesce = -1 })
	events := atSession(t)
	e.session(t, "s", events)
	var calls []int64
	for _, ev := range events {
		if ev.Type == core.EventToolCall {
			calls = append(calls, ev.Seq)
		}
	}
	read := func(path string) []sseEvent {
		t.Helper()
		var out []sseEvent
		for ev := range e.stream(t, path).events {
			out = append(out, ev)
		}
		return out
	}
	position := func(evs []sseEvent) string {
		t.Helper()
		last := evs[len(evs)-1]
		if last.Type != "datastar-patch-signals" {
			t.Fatalf("the move does not end with the page's position: %+v", last)
		}
		return last.field("signals")
	}

	// Forward to the next call: the frames of the events in between.
	from := calls[0] + 1
	evs := read(views.StepURL("s", views.StepCall, 1) + "&" + signalsQuery(from))
	if got := position(evs); got != `{"ttAt":`+itoa(calls[1])+`,"ttMode":"at"}` {
		t.Errorf("call+ from %d ends at %s, want %d", from, got, calls[1])
	}
	var ids []string
	for _, ev := range evs {
		if ev.ID != "" {
			ids = append(ids, ev.ID)
		}
	}
	var want []string
	for n := from + 1; n <= calls[1]; n++ {
		want = append(want, itoa(n))
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("call+ frames (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(func() []string {
		var h []string
		for _, ev := range evs {
			h = append(h, ev.Elements())
		}
		return h
	}(), ""), `data-call-id="`) {
		t.Error("call+ frames carry no card")
	}

	// Back one call: the page re-rendered at that seq.
	evs = read(views.StepURL("s", views.StepCall, -1) + "&" + signalsQuery(calls[1]))
	if got := position(evs); got != `{"ttAt":`+itoa(calls[0])+`,"ttMode":"at"}` {
		t.Errorf("call- position: %s", got)
	}
	var morph string
	for _, ev := range evs {
		if ev.Type == "datastar-patch-elements" {
			morph = ev.Elements()
		}
	}
	d := doc(t, morph)
	for _, id := range []string{"session-head", "transcript", "transport"} {
		if d.Find("#"+id).Length() != 1 {
			t.Errorf("call- morph lacks #%s", id)
		}
	}
	if got := d.Find(`[data-testid="at-seq"]`).Text(); got != itoa(calls[0]) {
		t.Errorf("call- header at %q", got)
	}

	// The next chapter mark: its card is the current element.
	evs = read(views.StepURL("s", views.StepMark, 1) + "&" + signalsQuery(0))
	d = doc(t, evs[len(evs)-2].Elements())
	cur := d.Find(`[aria-current="true"]`)
	if cur.Length() != 1 || cur.AttrOr("data-card", "") != "diff" {
		t.Errorf("mark+ from 0 marks %d elements, the first a %q card (the first mark is an edit)", cur.Length(), cur.AttrOr("data-card", ""))
	}
	if d.Find("#transport").AttrOr("data-current", "") != cur.AttrOr("id", "x") {
		t.Error("the transport does not name the current card")
	}

	// Nothing that way, and a pause: the position alone.
	for _, path := range []string{views.StepURL("s", views.StepEvent, -1) + "&" + signalsQuery(0), views.SeekURL("s", views.LivePlace()) + "?" + signalsQuery(7)} {
		evs = read(path)
		if len(evs) != 1 || evs[0].Type != "datastar-patch-signals" {
			t.Errorf("%s: %+v", path, evs)
		}
	}
	if got := read(views.SeekURL("s", views.LivePlace()) + "?" + signalsQuery(7))[0].field("signals"); got != `{"ttAt":7,"ttMode":"at"}` {
		t.Errorf("pause at 7: %s", got)
	}

	for path, want := range map[string]int{
		"/sessions/s/seek?step=sideways%2B":                400,
		"/sessions/s/seek?step=call":                       400,
		"/sessions/s/seek?at=x":                            400,
		"/sessions/s/seek?datastar=nope":                   400,
		"/sessions/s/stream?after=0&speed=3":               400,
		"/sessions/s/stream?after=0&until=-4":              400,
		"/sessions/nope/seek?at=0":                         404,
		"/sessions/s/seek?" + signalsQuery(3) + "&at=2":    200,
		"/sessions/s/seek?at=3&call=nope":                  404,
		"/sessions/s/seek?step=turn%2B&" + signalsQuery(0): 200,
	} {
		res, _ := e.get(t, path)
		if res.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, res.StatusCode, want)
		}
	}
}

// TestLive_FromAnEventOpensTheLivePage: a page that stood at an event goes
// live on its stream as a fresh load opens the session — one morph of the
// header, the latest window and the transport (its id the last seq), then
// the live signal — not one frame for every event after the seq it held;
// then it follows the session from the last seq.
func TestLive_FromAnEventOpensTheLivePage(t *testing.T) {
	e := newEnv(t, nil)
	events := atSession(t)
	e.session(t, "s", events[:len(events)-1])
	last := events[len(events)-2].Seq
	sc := e.stream(t, views.SessionStreamURL("s", 40)+"&"+signalsQuery(40))
	first := sc.next(t)
	if first.Type != "datastar-patch-elements" || first.ID != itoa(last) {
		t.Fatalf("first event %+v, want the live page's morph with id %d", first, last)
	}
	_, fresh := e.get(t, "/sessions/s")
	if diff := cmp.Diff(pageCards(t, fresh), pageCards(t, first.Elements())); diff != "" {
		t.Errorf("the morph's cards differ from a fresh load (-fresh +morph):\n%s", diff)
	}
	if !strings.Contains(first.Elements(), `id="transport"`) || !strings.Contains(first.Elements(), `data-mode="live"`) {
		t.Error("the morph carries no live transport")
	}
	if second := sc.next(t); second.Type != "datastar-patch-signals" || second.field("signals") != `{"ttAt":-1,"ttMode":"live"}` {
		t.Fatalf("second event %+v", second)
	}
	e.append(t, "s", events[len(events)-1])
	evs := sc.until(t, func(ev sseEvent) bool { return ev.ID == itoa(events[len(events)-1].Seq) })
	for _, ev := range evs {
		if ev.ID != "" && seqOf(ev) <= last {
			t.Errorf("event id %s at or before the live page's last seq", ev.ID)
		}
	}
}

// TestAt_ChaptersFollowTheLog: the transport's marks are the log's as it is
// now: after an append, and after a replaced log whose last event has the
// same seq and time as before.
func TestAt_ChaptersFollowTheLog(t *testing.T) {
	e := newEnv(t, nil)
	marks := func(path string) string {
		t.Helper()
		_, page := e.get(t, path)
		var out []string
		doc(t, page).Find(`#transport .mk a`).Each(func(_ int, s *goquery.Selection) {
			u, _ := url.Parse(s.AttrOr("href", ""))
			out = append(out, strings.TrimPrefix(s.Parent().AttrOr("class", ""), "mk mk-")+"@"+u.Query().Get("at"))
		})
		return strings.Join(out, " ")
	}
	log := func(failed bool) []core.Event {
		b := coretest.NewBuilder(t0)
		b.TurnStart().StepStart().Call("c", "note", `{}`).Result("c", "out", failed, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
		return b.Events
	}
	h := core.SessionHeader{ID: "w", CreatedAt: t0, Cwd: "/work"}
	e.watched(t, h, log(false))
	if got := marks("/sessions/w?at=1"); got != "" {
		t.Errorf("marks of a clean log: %q", got)
	}
	e.watched(t, h, log(true))
	if got := marks("/sessions/w?at=1"); got != "error@3" {
		t.Errorf("marks after the log was replaced: %q, want error@3", got)
	}
	b := coretest.NewBuilder(t0 + 1000)
	b.Events = log(true)
	b.TurnStart().StepStart().Call("d", "note", `{}`).Result("d", "out", true, nil, nil)
	e.append(t, "w", b.Events[6:]...)
	if got := marks("/sessions/w?at=1"); got != "error@3 error@9" {
		t.Errorf("marks after an append: %q", got)
	}
}

// TestShare_TimeTravelWithinScope: a link scoped at K replays within K — its
// page at N says "at event N of K", one past K is the link's page, anything
// else is the link's 404 — and its moves, loaders and playback use the
// link's URLs, redact as the link does and never show an event after K.
func TestShare_TimeTravelWithinScope(t *testing.T) {
	e, _ := shareEnv(t, func(d *web.Deps) { d.Tuning.PlaybackIdle = time.Millisecond })
	secret := "AKIA" + "IOSFODNN7EXAMPLE"
	events := atSession(t)
	const k = 100
	b := coretest.NewBuilder(events[k].Time)
	b.Events = append([]core.Event(nil), events[:k]...)
	b.Call("leak", "bash", `{"command":"echo `+secret+`"}`) // event k: the last the link shows
	events = append(b.Events, events[k+1:]...)
	for i := range events {
		events[i].Seq = int64(i)
	}
	e.session(t, "s1", events)
	_, path := e.share(t, "s1", `{"upToSeq":100,"redact":true}`)
	_, notFound := e.get(t, "/s/nope-nope-nope-nope-nope")

	_, page := e.get(t, path+"?at=40")
	d := doc(t, page)
	if got := d.Find(`[data-testid="at-seq"]`).Text() + " of " + d.Find(`[data-testid="at-of"]`).Text(); got != "40 of 100" {
		t.Errorf("the link's page at 40 says %q", got)
	}
	if _, o := e.get(t, "/sessions/s1?at=100"); !strings.Contains(o, secret) {
		t.Fatal("the owner's page does not show the secret: the test proves nothing")
	}
	_, owner := e.get(t, "/sessions/s1?at=40")
	states := func(html string) map[string]string {
		m := map[string]string{}
		for id, c := range pageCards(t, html) {
			m[id] = c.State
		}
		return m
	}
	if diff := cmp.Diff(states(owner), states(page)); diff != "" {
		t.Errorf("the link at 40 differs from the owner's page at 40 (-owner +link):\n%s", diff)
	}
	if d.Find(`#transport`).AttrOr("data-seek", "") != path+"/seek" || strings.Contains(d.Find("#transport").Text()+d.Find("#transport").AttrOr("data-stream", ""), "/sessions/") {
		t.Errorf("the link's transport leads to %q", d.Find(`#transport`).AttrOr("data-seek", ""))
	}
	marks := d.Find(`#transport .mk a`)
	if marks.Length() == 0 {
		t.Error("the link's page has no chapter marks")
	}
	marks.Each(func(_ int, m *goquery.Selection) {
		u, _ := url.Parse(m.AttrOr("href", ""))
		if n, _ := new(big).set(u.Query().Get("at")); n > k || u.Path != "" {
			t.Errorf("a mark beyond the scope or off the page: %s", m.AttrOr("href", ""))
		}
	})
	if _, ok := d.Find("#transport").Attr("data-follow"); ok {
		t.Error("a scoped link's page offers to follow the session")
	}

	for q, want := range map[string]int{"?at=100": 200, "?at=101": 200, "?at=102": 404, "?at=x": 404, "?call=leak": 200, "?call=call_demo_15": 404, "?event=150": 404} {
		res, body := e.get(t, path+q)
		if res.StatusCode != want || want == 404 && body != notFound {
			t.Errorf("%s: %d, want %d (the link's one 404 page)", q, res.StatusCode, want)
		}
		if want == 200 && strings.Contains(body, secret) {
			t.Errorf("%s shows the secret", q)
		}
	}

	// A move: the link's page at 90, with its URLs.
	sc := e.stream(t, path+"/seek?at=90")
	var moved strings.Builder
	for ev := range sc.events {
		moved.WriteString(ev.Elements() + ev.field("signals"))
	}
	if !strings.Contains(moved.String(), `"ttAt":90`) || strings.Contains(moved.String(), "/sessions/s1") {
		t.Errorf("the link's move to 90: %.300s", moved.String())
	}
	// Forward past the scope: nothing that way.
	sc = e.stream(t, path+"/seek?step=event%2B&"+signalsQuery(k))
	if ev := sc.next(t); ev.field("signals") != `{"ttAt":100,"ttMode":"at"}` {
		t.Errorf("a step past the scope: %+v", ev)
	}

	// A playback stops at the scope's end, redacted.
	var played strings.Builder
	last := int64(-1)
	for ev := range e.stream(t, path+"/stream?after=80&speed=50").events {
		played.WriteString(ev.Elements())
		if ev.ID != "" {
			last = seqOf(ev)
		}
		if n := seqOf(ev); n > k {
			t.Errorf("the link's playback sent event %d", n)
		}
	}
	if last != k || strings.Contains(played.String(), secret) || !strings.Contains(played.String(), `data-call-id="leak"`) {
		t.Errorf("the link's playback ended at %d, secret shown %v", last, strings.Contains(played.String(), secret))
	}
	if strings.Contains(played.String(), "/sessions/s1") {
		t.Error("the link's playback frames carry the owner's URLs")
	}
}

// TestShareLive_FromAnEventOpensTheLivePage: a share link's page that stood
// at an event goes live as a fresh load of the link opens it — one morph
// with the latest window and a live transport, not every later card
// appended — and then follows the session from there.
func TestShareLive_FromAnEventOpensTheLivePage(t *testing.T) {
	e, _ := shareEnv(t, nil)
	events := atSession(t)
	e.session(t, "s", events[:len(events)-1])
	last := events[len(events)-2].Seq
	_, path := e.share(t, "s", `{"redact":true}`)
	sc := e.stream(t, path+"/stream?after=40&"+signalsQuery(40))
	first := sc.next(t)
	if first.Type != "datastar-patch-elements" || first.ID != itoa(last) {
		t.Fatalf("first event %+v, want the live page's morph with id %d", first, last)
	}
	_, fresh := e.get(t, path)
	if diff := cmp.Diff(pageCards(t, fresh), pageCards(t, first.Elements())); diff != "" {
		t.Errorf("the morph's cards differ from a fresh load of the link (-fresh +morph):\n%s", diff)
	}
	if !strings.Contains(first.Elements(), `data-mode="live"`) {
		t.Error("the morph carries no live transport")
	}
	if second := sc.next(t); second.Type != "datastar-patch-signals" || second.field("signals") != `{"ttAt":-1,"ttMode":"live"}` {
		t.Fatalf("second event %+v", second)
	}
	e.append(t, "s", events[len(events)-1])
	evs := sc.until(t, func(ev sseEvent) bool { return ev.ID == itoa(events[len(events)-1].Seq) })
	for _, ev := range evs {
		if ev.ID != "" && seqOf(ev) <= last {
			t.Errorf("event id %s at or before the live page's last seq", ev.ID)
		}
	}
}
