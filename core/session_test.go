package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

var ctx = context.Background()

func newMemSession(t *testing.T) *core.Session {
	t.Helper()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Now: fixedClock(5000)})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	return s
}

func mustAppend(t *testing.T, s *core.Session, typ string, data any, opts core.AppendOptions) core.Event {
	t.Helper()
	e, err := s.Append(ctx, typ, data, opts)
	if err != nil {
		t.Fatalf("Append %s: %v", typ, err)
	}
	return e
}

var appendOp = core.AppendOptions{SurfaceOp: core.AppendOp()}

func TestAppendAssignsContiguousSeqAndTime(t *testing.T) {
	s := newMemSession(t)
	if got := s.NextSeq(); got != 0 {
		t.Fatalf("NextSeq of a new session = %d, want 0", got)
	}
	e0 := mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	e1 := mustAppend(t, s, core.EventStepStart, json.RawMessage(`{ "turn": 1, "step": 1 }`), core.AppendOptions{})
	e2 := mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u1", "a <b> & c"), appendOp)
	want := []string{
		`{"type":"turn/start","seq":0,"time":5000,"data":{"turn":1}}`,
		`{"type":"step/start","seq":1,"time":5001,"data":{"turn":1,"step":1}}`,
		`{"type":"user/message","seq":2,"time":5002,"data":{"id":"u1","role":"user","content":[{"type":"text","text":"a <b> & c"}],"source":{"kind":"user"}},"surfaceOp":"append"}`,
	}
	if diff := cmp.Diff(want, eventJSON(t, []core.Event{e0, e1, e2})); diff != "" {
		t.Errorf("returned events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, eventJSON(t, s.Events())); diff != "" {
		t.Errorf("Events() (-want +got):\n%s", diff)
	}
	if got := s.NextSeq(); got != 3 {
		t.Errorf("NextSeq = %d, want 3", got)
	}
}

func TestAppendDetachesCallerData(t *testing.T) {
	s := newMemSession(t)
	raw := json.RawMessage(`{"turn":1}`)
	seqs := []int64{0}
	mustAppend(t, s, core.EventTurnStart, raw, core.AppendOptions{})
	mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u", "x"), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: seqs})
	raw[2] = 'X'
	seqs[0] = 99
	got := s.Events()
	if string(got[0].Data) != `{"turn":1}` || got[1].SourceEventSeqs[0] != 0 {
		t.Errorf("log changed with the caller's buffers: %s %v", got[0].Data, got[1].SourceEventSeqs)
	}
}

func TestAppendRejectsNonLosslessData(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	type payload struct {
		F float64 `json:"f"`
	}
	cases := []struct {
		name string
		data any
	}{
		{"NaN", payload{F: math.NaN()}},
		{"+Inf", payload{F: math.Inf(1)}},
		{"negative zero", payload{F: math.Copysign(0, -1)}},
		{"channel", map[string]any{"c": make(chan int)}},
		{"func", func() {}},
		{"cycle through a map", cycle},
		{"raw negative zero", json.RawMessage(`{"a":-0.0}`)},
		{"raw out of range", json.RawMessage(`{"a":1e999}`)},
		{"raw invalid", json.RawMessage(`{"a":`)},
		{"raw nil", json.RawMessage(nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemSession(t)
			mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
			_, err := s.Append(ctx, "todo/write", tc.data, core.AppendOptions{})
			wantCoreError(t, err, core.CodeInvalid, `session event "todo/write" carries non-JSON-serializable data`)
			if !errors.Is(err, core.ErrNotLossless) {
				t.Errorf("error %v does not wrap ErrNotLossless", err)
			}
			if got := s.NextSeq(); got != 1 {
				t.Errorf("NextSeq after rejection = %d, want 1", got)
			}
			if got := len(s.Events()); got != 1 {
				t.Errorf("len(Events) after rejection = %d, want 1", got)
			}
			if e := mustAppend(t, s, core.EventTurnEnd, json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`), core.AppendOptions{}); e.Seq != 1 {
				t.Errorf("next append got seq %d, want 1", e.Seq)
			}
		})
	}
}

func TestAppendRejectsLegacyAndMalformed(t *testing.T) {
	cases := []struct {
		name, typ string
		data      string
		opts      core.AppendOptions
		msg       string
	}{
		{"header delta", "request/header-delta", `{}`, core.AppendOptions{},
			`session event "request/header-delta" uses unsupported legacy request/header-delta format`},
		{"fallback reason", core.EventRequestHeader, `{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}`, core.AppendOptions{},
			`session event "request/header" uses unsupported legacy request/header reason "fallback"`},
		{"header without model", core.EventRequestHeader, `{"header":{"config":{"provider":"p"}},"reason":"initial"}`, core.AppendOptions{},
			`session event "request/header" lacks provider/model`},
		{"empty type", "", `{}`, core.AppendOptions{}, `session event type must be a non-empty string`},
		{"user message without id", core.EventUserMessage, `{"role":"user","content":[],"source":{"kind":"user"}}`, appendOp,
			`session event "user/message" lacks an identified message`},
		{"tool result with mismatched ids", core.EventToolResult,
			`{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"x","content":[],"isError":false}],"source":{"kind":"tool","callId":"c1"}}}`,
			core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{0}},
			`session event "tool/result" message has mismatched tool call ids`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemSession(t)
			mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
			_, err := s.Append(ctx, tc.typ, json.RawMessage(tc.data), tc.opts)
			wantCoreError(t, err, core.CodeInvalid, tc.msg)
			if got := s.NextSeq(); got != 1 {
				t.Errorf("NextSeq after rejection = %d, want 1", got)
			}
		})
	}
}

// baseLog appends a turn with a user message, an assistant message calling
// c1 and c2, both calls and both results: seqs 0..8.
//
//	0 turn/start  1 step/start  2 user/message  3 assistant/message
//	4 tool/call c1  5 tool/result c1  6 tool/call c2  7 tool/result c2
//	8 user/message
func baseLog(t *testing.T, s *core.Session) {
	t.Helper()
	raw := func(d string) json.RawMessage { return json.RawMessage(d) }
	mustAppend(t, s, core.EventTurnStart, raw(turnStart(1)), core.AppendOptions{})
	mustAppend(t, s, core.EventStepStart, raw(stepData(1, 1)), core.AppendOptions{})
	mustAppend(t, s, core.EventUserMessage, raw(userMsg("u1", "hello")), appendOp)
	mustAppend(t, s, core.EventAssistantMessage, raw(assistantMsg(1, 1, "a1", textBlock("calling"), callBlock("c1", "read", `{}`), callBlock("c2", "read", `{}`))),
		core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{}})
	mustAppend(t, s, core.EventToolCall, raw(toolCall(1, 1, "c1", "read", `{}`)), core.AppendOptions{})
	mustAppend(t, s, core.EventToolResult, raw(toolResult(1, 1, "r1", "c1", "one", false, `,"meta":{"n":1}`)),
		core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{4}})
	mustAppend(t, s, core.EventToolCall, raw(toolCall(1, 1, "c2", "read", `{}`)), core.AppendOptions{})
	mustAppend(t, s, core.EventToolResult, raw(toolResult(1, 1, "r2", "c2", "two", true, `,"error":{"name":"FsError","code":"FS_X"}`)),
		core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{6}})
	mustAppend(t, s, core.EventUserMessage, raw(userMsg("u2", "more")), appendOp)
}

func replaceOp(start, end int64) *core.SurfaceOp {
	return &core.SurfaceOp{Replace: true, Start: start, End: end}
}

func TestAppendSurfaceRules(t *testing.T) {
	resultData := toolResult(1, 1, "r1", "c1", "one", false, `,"meta":{"n":1}`)
	cases := []struct {
		name string
		typ  string
		data string
		opts core.AppendOptions
		msg  string // "" = accepted
	}{
		{"non-surface with surfaceOp", core.EventStepEnd, stepData(1, 1), appendOp,
			`session event "step/end" is not surface-eligible and cannot carry surfaceOp`},
		{"non-surface with sourceEventSeqs", core.EventToolCall, toolCall(1, 1, "c3", "x", ""), core.AppendOptions{SourceEventSeqs: []int64{1}},
			`session event "tool/call" is not surface-eligible and cannot carry sourceEventSeqs`},
		{"surface without surfaceOp", core.EventUserMessage, userMsg("u", "x"), core.AppendOptions{},
			`session event "user/message" is surface-eligible and requires a surfaceOp marker`},
		{"source equal to seq", core.EventUserMessage, userMsg("u", "x"), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{2, 9}},
			`sourceEventSeqs must reference earlier events: 9 >= current seq 9`},
		{"source above seq", core.EventUserMessage, userMsg("u", "x"), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{12, 10}},
			`sourceEventSeqs must reference earlier events: 12 >= current seq 9`},
		{"duplicate sources", core.EventUserMessage, userMsg("u", "x"), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{2, 2}},
			`sourceEventSeqs must not contain duplicates`},
		{"negative source", core.EventUserMessage, userMsg("u", "x"), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{-1}},
			`session event "user/message" sourceEventSeqs must densely contain non-negative safe integers`},
		{"empty sources on tool/result", core.EventToolResult, toolResult(1, 1, "r9", "c9", "x", false, ""), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{}},
			`sourceEventSeqs must not be empty except on assistant/message`},
		{"empty sources on assistant/message", core.EventAssistantMessage, assistantMsg(1, 1, "a9", textBlock("ok")), core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{}},
			``},
		{"replace start not on surface", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(4, 5), SourceEventSeqs: []int64{4, 5}},
			`surface replace: start seq 4 not found in surface`},
		{"replace end not on surface", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(2, 6), SourceEventSeqs: []int64{2, 6}},
			`surface replace: end seq 6 not found in surface`},
		{"replace start after end", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(5, 3), SourceEventSeqs: []int64{3, 5}},
			`surface replace: start seq 5 (index 2) is after end seq 3 (index 1)`},
		{"replace with negative start", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(-1, 3), SourceEventSeqs: []int64{3}},
			`session event "user/message" carries an invalid replace surfaceOp`},
		{"replace missing shadowed", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(2, 5), SourceEventSeqs: []int64{2}},
			`surface replace: sourceEventSeqs must include every shadowed surface node; missing 3, 5`},
		{"replace without sources", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(2, 2)},
			`surface replace: sourceEventSeqs must include every shadowed surface node; missing 2`},
		{"summary replacing a range", core.EventUserMessage, userMsg("s", "summary"), core.AppendOptions{SurfaceOp: replaceOp(2, 5), SourceEventSeqs: []int64{2, 3, 5}},
			``},
		{"tool/result rewrite of content", core.EventToolResult, toolResult(1, 1, "r1", "c1", "o[...]e", false, `,"meta":{"n":1}`),
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}}, ``},
		{"tool/result rewrite with reordered keys", core.EventToolResult,
			`{"meta":{"n":1},"step":1,"turn":1,"message":{"source":{"callId":"c1","kind":"tool"},"role":"user","id":"r1","content":[{"isError":false,"toolCallId":"c1","type":"tool-result","content":[]}]}}`,
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}}, ``},
		{"tool/result rewrite changing meta", core.EventToolResult, toolResult(1, 1, "r1", "c1", "one", false, `,"meta":{"n":2}`),
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}},
			`tool/result surface replacement may change only content`},
		{"tool/result rewrite dropping meta", core.EventToolResult, toolResult(1, 1, "r1", "c1", "one", false, ``),
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}},
			`tool/result surface replacement may change only content`},
		{"tool/result rewrite changing isError", core.EventToolResult, toolResult(1, 1, "r1", "c1", "one", true, `,"meta":{"n":1}`),
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}},
			`tool/result surface replacement may change only content`},
		{"tool/result rewrite changing message id", core.EventToolResult, toolResult(1, 1, "r1b", "c1", "one", false, `,"meta":{"n":1}`),
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}},
			`tool/result surface replacement may change only content`},
		{"tool/result rewrite changing step", core.EventToolResult, toolResult(1, 2, "r1", "c1", "one", false, `,"meta":{"n":1}`),
			core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}},
			`tool/result surface replacement may change only content`},
		{"tool/result shadowing two results", core.EventToolResult, resultData,
			core.AppendOptions{SurfaceOp: replaceOp(5, 7), SourceEventSeqs: []int64{5, 7}},
			`tool/result surface replacement must rewrite exactly one current node`},
		{"tool/result replacing a user message", core.EventToolResult, resultData,
			core.AppendOptions{SurfaceOp: replaceOp(2, 2), SourceEventSeqs: []int64{2}},
			`tool/result surface replacement must target a current tool/result`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemSession(t)
			baseLog(t, s)
			before := s.DeriveMessages()
			e, err := s.Append(ctx, tc.typ, json.RawMessage(tc.data), tc.opts)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("Append: %v", err)
				}
				if e.Seq != 9 || s.NextSeq() != 10 {
					t.Errorf("accepted event seq %d, NextSeq %d; want 9, 10", e.Seq, s.NextSeq())
				}
				return
			}
			wantCoreError(t, err, core.CodeInvalid, tc.msg)
			if got := s.NextSeq(); got != 9 {
				t.Errorf("NextSeq after rejection = %d, want 9", got)
			}
			if diff := cmp.Diff(before, s.DeriveMessages()); diff != "" {
				t.Errorf("transcript changed by a rejected append (-before +after):\n%s", diff)
			}
		})
	}
}

func TestAppendThroughStore(t *testing.T) {
	st := newFakeStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st, Now: fixedClock(1), FlushDelay: time.Hour})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	if diff := cmp.Diff([]core.SessionHeader{header("s1")}, st.created); diff != "" {
		t.Errorf("CreateSession headers (-want +got):\n%s", diff)
	}
	mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u", "x"), appendOp)
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if diff := cmp.Diff(eventJSON(t, s.Events()), eventJSON(t, st.stored("s1"))); diff != "" {
		t.Errorf("store differs from memory (-memory +store):\n%s", diff)
	}
	if s.Durable() != 2 || st.calls != 1 {
		t.Errorf("Durable %d after %d store calls; want 2 after 1 (one commit for both)", s.Durable(), st.calls)
	}
}

// TestCommitFailurePoisonsSession: a failed commit cuts the log back to
// its durable prefix and every later append, Sync and WaitDurable returns
// the store's error, wrapped with its code.
func TestCommitFailurePoisonsSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail error
		code string
		msg  string
	}{
		{"coded", core.Errorf(core.CodeConflict, "seq 2 already stored"), core.CodeConflict,
			`session "s1": store turn/end at seq 2: seq 2 already stored`},
		{"plain", errors.New("disk full"), core.CodeInternal, `session "s1": store turn/end at seq 2: disk full`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st, Now: fixedClock(1), Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var observed []int64
			s.OnAppend(func(e core.Event) { observed = append(observed, e.Seq) })
			mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
			mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u", "x"), appendOp)
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			st.setFail(tc.fail)
			e := mustAppend(t, s, core.EventTurnEnd, json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`), core.AppendOptions{})
			err = s.Sync(ctx)
			wantCoreError(t, err, tc.code, tc.msg)
			if !errors.Is(err, tc.fail) {
				t.Errorf("store error not wrapped: %v", err)
			}
			if err := s.WaitDurable(ctx, e.Seq); !errors.Is(err, tc.fail) {
				t.Errorf("WaitDurable of the lost event = %v, want the commit's failure", err)
			}
			if s.NextSeq() != 2 || len(s.Events()) != 2 || s.Durable() != 2 {
				t.Errorf("after the failure: NextSeq %d, %d events, Durable %d; want the durable prefix of 2",
					s.NextSeq(), len(s.Events()), s.Durable())
			}
			if got := len(s.DeriveMessages()); got != 1 {
				t.Errorf("transcript has %d messages, want the durable user message only", got)
			}
			st.setFail(nil)
			if _, err := s.Append(ctx, core.EventTurnEnd, json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`), core.AppendOptions{}); !errors.Is(err, tc.fail) {
				t.Errorf("append after the failure = %v, want the failure again", err)
			}
			if err := s.Sync(ctx); !errors.Is(err, tc.fail) {
				t.Errorf("Sync after the failure = %v, want the failure again", err)
			}
			if diff := cmp.Diff([]int64{0, 1}, observed); diff != "" {
				t.Errorf("observers saw (-want +got):\n%s", diff)
			}
			if got := len(st.stored("s1")); got != 2 {
				t.Errorf("store holds %d events, want 2", got)
			}
		})
	}
}

func TestAppendInvalidEventNeverReachesStore(t *testing.T) {
	st := newFakeStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, core.EventUserMessage, core.NewUserMessage("u", "x"), core.AppendOptions{}); err == nil {
		t.Fatal("surface event without surfaceOp accepted")
	}
	if _, err := s.Append(ctx, "x/y", math.NaN(), core.AppendOptions{}); err == nil {
		t.Fatal("NaN accepted")
	}
	if st.calls != 0 {
		t.Errorf("store called %d times for rejected events", st.calls)
	}
}

func TestAppendUnknownTypeStoredVerbatim(t *testing.T) {
	s := newMemSession(t)
	e := mustAppend(t, s, "future/thing", json.RawMessage(`{"b":[1,2],"a":"<x>"}`), core.AppendOptions{Ignorable: true})
	want := `{"type":"future/thing","seq":0,"time":5000,"data":{"b":[1,2],"a":"<x>"},"ignorable":true}`
	if diff := cmp.Diff([]string{want}, eventJSON(t, []core.Event{e})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNewSessionDefaultsAndHeaderValidation(t *testing.T) {
	s, err := core.NewSession(ctx, core.SessionHeader{}, core.SessionOptions{Now: fixedClock(42)})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	h := s.Header()
	if h.ID == "" || h.CreatedAt != 42 || h.Version != 0 {
		t.Errorf("defaults not filled: %+v", h)
	}
	_, err = core.NewSession(ctx, core.SessionHeader{ID: "x", Cwd: "rel/dir"}, core.SessionOptions{})
	wantCoreError(t, err, core.CodeInvalid, `session header cwd must be an absolute path, got "rel/dir"`)
	_, err = core.NewSession(ctx, core.SessionHeader{ID: "x", Version: 2}, core.SessionOptions{})
	wantCoreError(t, err, core.CodeInvalid, `session header version must be 0, got 2`)
}

func TestConcurrentAppendsAndObserverOrder(t *testing.T) {
	const workers, perWorker = 16, 25
	st := newFakeStore()
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	const n = workers * perWorker
	var mu sync.Mutex
	var seen1, seen2 []int64
	all := make(chan struct{}) // closed when the second observer saw the last seq
	s.OnAppend(func(e core.Event) { mu.Lock(); seen1 = append(seen1, e.Seq); mu.Unlock() })
	s.OnAppend(func(e core.Event) {
		mu.Lock()
		seen2 = append(seen2, e.Seq)
		mu.Unlock()
		if e.Seq == n-1 {
			close(all)
		}
	})

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				e, err := s.Append(ctx, core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: "c", Name: "n", Arguments: strings.Repeat("x", w+i)}, core.AppendOptions{})
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				if i%5 == 4 { // durability points among the appends
					if err := s.Sync(ctx); err != nil || s.Durable() <= e.Seq {
						t.Errorf("Sync = %v with %d durable; want seq %d durable", err, s.Durable(), e.Seq)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	select { // Sync does not wait for observers; they run after the commit
	case <-all:
	case <-failAfter(t).Done():
		t.Fatal("the observers never saw the last event")
	}
	mu.Lock()
	defer mu.Unlock()

	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i)
	}
	var got []int64
	for _, e := range s.Events() {
		got = append(got, e.Seq)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log seqs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, seen1); diff != "" {
		t.Errorf("observer 1 order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, seen2); diff != "" {
		t.Errorf("observer 2 order (-want +got):\n%s", diff)
	}
	if got := len(st.stored("s1")); got != n {
		t.Errorf("store holds %d events, want %d", got, n)
	}
}

func TestObserverPanicIsContained(t *testing.T) {
	var logBuf bytes.Buffer
	s, err := core.NewSession(ctx, header("s1"), core.SessionOptions{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	s.OnAppend(func(core.Event) { panic("boom") })
	s.OnAppend(func(e core.Event) { got = append(got, e.Seq) })
	mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	mustAppend(t, s, core.EventTurnEnd, core.TurnEnd{Turn: 1, Reason: core.TurnEndReason{Kind: core.TurnCompleted}}, core.AppendOptions{})
	if diff := cmp.Diff([]int64{0, 1}, got); diff != "" {
		t.Errorf("second observer saw (-want +got):\n%s", diff)
	}
	if !strings.Contains(logBuf.String(), "session observer panicked") || !strings.Contains(logBuf.String(), "boom") {
		t.Errorf("panic not logged: %q", logBuf.String())
	}
}

// TestReentrantAppendDeliveredAfter checks that an observer may append to
// its own session: no deadlock, and the new event reaches every observer
// after the current one, in seq order.
func TestReentrantAppendDeliveredAfter(t *testing.T) {
	s := newMemSession(t)
	var seen []int64
	var inner core.Event
	var innerErr error
	s.OnAppend(func(e core.Event) {
		seen = append(seen, e.Seq)
		if e.Seq == 0 {
			inner, innerErr = s.Append(ctx, "note/x", map[string]int{"a": 1}, core.AppendOptions{})
			seen = append(seen, -1) // marks the end of the outer delivery
		}
	})
	mustAppend(t, s, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	if innerErr != nil || inner.Seq != 1 {
		t.Fatalf("append from an observer = seq %d, %v; want seq 1", inner.Seq, innerErr)
	}
	if diff := cmp.Diff([]int64{0, -1, 1}, seen); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if s.NextSeq() != 2 {
		t.Errorf("NextSeq = %d, want 2", s.NextSeq())
	}
}

func TestRemovedObserverNotCalled(t *testing.T) {
	s := newMemSession(t)
	calls := 0
	remove := s.OnAppend(func(core.Event) { calls++ })
	mustAppend(t, s, "note/x", 1, core.AppendOptions{})
	remove()
	mustAppend(t, s, "note/x", 2, core.AppendOptions{})
	if calls != 1 {
		t.Errorf("observer called %d times, want 1", calls)
	}
}

func TestOpenSessionResumes(t *testing.T) {
	src := newMemSession(t)
	baseLog(t, src)
	st := newFakeStore()
	s, err := core.OpenSession(header("s1"), src.Events(), core.SessionOptions{Store: st, Now: fixedClock(9000)})
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	if st.calls != 0 || len(st.created) != 0 {
		t.Errorf("OpenSession wrote to the store")
	}
	if diff := cmp.Diff(src.DeriveMessages(), s.DeriveMessages()); diff != "" {
		t.Errorf("resumed transcript (-want +got):\n%s", diff)
	}
	st.events["s1"] = src.Events()
	e := mustAppend(t, s, core.EventToolResult, json.RawMessage(toolResult(1, 1, "r1", "c1", "short", false, `,"meta":{"n":1}`)),
		core.AppendOptions{SurfaceOp: replaceOp(5, 5), SourceEventSeqs: []int64{5}})
	if e.Seq != 9 || e.Time != 9000 {
		t.Errorf("resumed append seq %d time %d, want 9 9000", e.Seq, e.Time)
	}

	bad := append([]core.Event(nil), src.Events()...)
	bad[3].Seq = 7
	_, err = core.OpenSession(header("s1"), bad, core.SessionOptions{})
	wantCoreError(t, err, core.CodeInvalid, `open session "s1": seed event at index 3 has seq 7 (expected 3); seed must be contiguous from 0`)
}

func TestSessionRepairInterrupted(t *testing.T) {
	log := []core.Event{
		ev(0, core.EventTurnStart, turnStart(1)),
		ev(1, core.EventStepStart, stepData(1, 1)),
		sev(2, core.EventAssistantMessage, assistantMsg(1, 1, "a", callBlock("c1", "read", `{}`))),
		ev(3, core.EventToolCall, toolCall(1, 1, "c1", "read", `{}`)),
	}
	st := newFakeStore()
	st.events["s1"] = clone(log)
	s, err := core.OpenSession(header("s1"), log, core.SessionOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	var observed []int64
	s.OnAppend(func(e core.Event) { observed = append(observed, e.Seq) })
	got, err := s.RepairInterrupted(ctx)
	if err != nil {
		t.Fatalf("RepairInterrupted: %v", err)
	}
	want := eventJSON(t, core.InterruptedTurnClosers(log))
	if diff := cmp.Diff(want, eventJSON(t, got)); diff != "" {
		t.Errorf("returned closers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(eventJSON(t, s.Events()), eventJSON(t, st.stored("s1"))); diff != "" {
		t.Errorf("store differs from memory (-memory +store):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{4, 5, 6}, observed); diff != "" {
		t.Errorf("observed seqs (-want +got):\n%s", diff)
	}
	if s.NextSeq() != 7 || st.calls != 1 {
		t.Errorf("NextSeq %d, store calls %d; want 7, 1 (one batch)", s.NextSeq(), st.calls)
	}
	if got := len(s.DeriveMessages()); got != 2 {
		t.Errorf("transcript has %d messages, want the assistant message and its synthetic result", got)
	}
	again, err := s.RepairInterrupted(ctx)
	if err != nil || again != nil {
		t.Errorf("second repair = %v, %v; want nil, nil", again, err)
	}
}

func BenchmarkAppendInMemory(b *testing.B) {
	for _, observed := range []bool{false, true} {
		b.Run(fmt.Sprintf("observed=%t", observed), func(b *testing.B) {
			s, err := core.NewSession(ctx, header("bench"), core.SessionOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if observed {
				s.OnAppend(func(core.Event) {})
			}
			data := core.ToolCall{Turn: 1, Step: 1, CallID: "call-1", Name: "read", Arguments: `{"path":"/etc/hosts"}`}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Append(ctx, core.EventToolCall, data, core.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
