package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
)

// fixedClock returns a Now that starts at ms and advances 1ms per call.
func fixedClock(ms int64) func() time.Time {
	var mu sync.Mutex
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := time.UnixMilli(ms)
		ms++
		return t
	}
}

// ev builds a log event; time is 1000+seq.
func ev(seq int64, typ, data string) core.Event {
	return core.Event{Type: typ, Seq: seq, Time: 1000 + seq, Data: json.RawMessage(data)}
}

// sev builds an append-origin surface event citing sources (nil = absent).
func sev(seq int64, typ, data string, sources ...int64) core.Event {
	e := ev(seq, typ, data)
	e.SurfaceOp = &core.SurfaceOp{}
	e.SourceEventSeqs = sources
	return e
}

// rev builds a replacement surface event.
func rev(seq int64, typ, data string, start, end int64, sources ...int64) core.Event {
	e := ev(seq, typ, data)
	e.SurfaceOp = &core.SurfaceOp{Replace: true, Start: start, End: end}
	e.SourceEventSeqs = sources
	return e
}

func userMsg(id, text string) string {
	return fmt.Sprintf(`{"id":%q,"role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, id, text)
}

// assistantMsg returns assistant/message data; blocks are raw JSON blocks.
func assistantMsg(turn, step int, id string, blocks ...string) string {
	return fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":%q,"role":"assistant","content":[%s],`+
		`"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}}`,
		turn, step, id, strings.Join(blocks, ","))
}

func textBlock(s string) string { return fmt.Sprintf(`{"type":"text","text":%q}`, s) }

func callBlock(id, name, args string) string {
	return fmt.Sprintf(`{"type":"tool-call","id":%q,"name":%q,"arguments":%q}`, id, name, args)
}

func toolCall(turn, step int, callID, name, args string) string {
	return fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"name":%q,"arguments":%q}`, turn, step, callID, name, args)
}

// toolResult returns tool/result data; extra is appended to the data object
// (e.g. `,"meta":{…}`).
func toolResult(turn, step int, id, callID, text string, isError bool, extra string) string {
	return fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":%q,"role":"user","content":[{"type":"tool-result",`+
		`"toolCallId":%q,"content":[{"type":"text","text":%q}],"isError":%t}],"source":{"kind":"tool","callId":%q}}%s}`,
		turn, step, id, callID, text, isError, callID, extra)
}

func turnStart(n int) string         { return fmt.Sprintf(`{"turn":%d}`, n) }
func stepData(turn, step int) string { return fmt.Sprintf(`{"turn":%d,"step":%d}`, turn, step) }

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// header returns a valid session header.
func header(id string) core.SessionHeader {
	return core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1700000000000, Cwd: "/work"}
}

// fakeStore is an EventStore in memory that can be told to fail.
type fakeStore struct {
	mu      sync.Mutex
	created []core.SessionHeader
	events  map[string][]core.Event
	calls   int
	fail    error // returned by AppendEvents when set
	delay   time.Duration
	// hold, when set, blocks AppendEvents after it told entered, until hold
	// is closed.
	hold    chan struct{}
	entered chan struct{}
}

func (f *fakeStore) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// holdNext makes the next AppendEvents block; it returns a channel that
// is closed once that call entered, and release to let it go on.
func (f *fakeStore) holdNext() (entered <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold, f.entered = make(chan struct{}), make(chan struct{})
	hold := f.hold
	return f.entered, func() { close(hold) }
}

func newFakeStore() *fakeStore { return &fakeStore{events: map[string][]core.Event{}} }

func (f *fakeStore) CreateSession(_ context.Context, h core.SessionHeader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, h)
	return nil
}

func (f *fakeStore) AppendEvents(_ context.Context, id string, evs []core.Event) error {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	f.mu.Lock()
	if hold := f.hold; hold != nil {
		f.hold = nil
		close(f.entered)
		f.mu.Unlock()
		<-hold
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return f.fail
	}
	log := f.events[id]
	for i, e := range evs {
		if e.Seq != int64(len(log)+i) {
			return core.Errorf(core.CodeConflict, "seq %d does not continue the log at %d", e.Seq, len(log)+i)
		}
	}
	f.events[id] = append(log, evs...)
	return nil
}

func (f *fakeStore) stored(id string) []core.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.Event(nil), f.events[id]...)
}

// wantCoreError fails unless err is a *core.Error with code and message.
func wantCoreError(t *testing.T, err error, code, msg string) {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want *core.Error", err, err)
	}
	if ce.Code != code || ce.Error() != msg {
		t.Fatalf("error = %s %q\nwant    %s %q", ce.Code, ce.Error(), code, msg)
	}
}

// eventJSON marshals events one per line.
func eventJSON(t *testing.T, evs []core.Event) []string {
	t.Helper()
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		b, err := e.MarshalJSON() // json.Marshal would HTML-escape it
		if err != nil {
			t.Fatalf("marshal event %d: %v", e.Seq, err)
		}
		out = append(out, string(b))
	}
	return out
}

// transcriptLog is a turn whose transcript exercises every projection rule.
func transcriptLog() []core.Event {
	return []core.Event{
		ev(0, core.EventTurnStart, turnStart(1)),
		ev(1, core.EventStepStart, stepData(1, 1)),
		sev(2, core.EventUserMessage, userMsg("u1", "hello")),
		ev(3, core.EventAssistantChunk, `{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}`),
		sev(4, core.EventAssistantMessage, assistantMsg(1, 1, "a1", textBlock("calling"), callBlock("c1", "read", `{"p":1}`)), 3),
		ev(5, core.EventToolCall, toolCall(1, 1, "c1", "read", `{"p":1}`)),
		sev(6, core.EventToolResult, toolResult(1, 1, "r1", "c1", "file body", true, `,"error":{"name":"FsError","code":"FS_X"},"meta":{"bytes":9}`), 5),
		ev(7, core.EventStepEnd, stepData(1, 1)),
		ev(8, core.EventStepStart, stepData(1, 2)),
		sev(9, core.EventAssistantMessage, assistantMsg(1, 2, "a-empty")),
		ev(10, core.EventStepEnd, stepData(1, 2)),
		ev(11, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"max-tokens"}}`),
	}
}

func clone(evs []core.Event) []core.Event { return append([]core.Event(nil), evs...) }
