package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/notes"
)

var quiet = slog.New(slog.DiscardHandler)

// memStore is an in-memory core.EventStore that checks seq contiguity,
// can fail on demand and measures the time spent inside it.
type memStore struct {
	mu       sync.Mutex
	headers  map[string]core.SessionHeader
	events   map[string][]core.Event
	failAt   int // fail the failAt-th AppendEvents call (1-based); 0 never
	calls    int
	duration time.Duration
	batches  [][]int64 // the seqs of each successful AppendEvents call
	// onNote takes the fork note of CreateFork (nil: it is dropped).
	onNote func(notes.Input) error
}

func newMemStore() *memStore {
	return &memStore{headers: map[string]core.SessionHeader{}, events: map[string][]core.Event{}}
}

func (s *memStore) CreateSession(_ context.Context, h core.SessionHeader) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.headers[h.ID]; ok {
		return core.Errorf(core.CodeConflict, "session %s exists", h.ID)
	}
	s.headers[h.ID] = h
	return nil
}

func (s *memStore) AppendEvents(ctx context.Context, id string, evs []core.Event) error {
	start := time.Now()
	s.mu.Lock()
	defer func() {
		s.duration += time.Since(start)
		s.mu.Unlock()
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	s.calls++
	if s.failAt > 0 && s.calls >= s.failAt {
		return core.Errorf(core.CodeUnavailable, "store: disk on fire")
	}
	if _, ok := s.headers[id]; !ok {
		return core.Errorf(core.CodeNotFound, "no session %s", id)
	}
	log := s.events[id]
	for i, e := range evs {
		if e.Seq != int64(len(log)+i) {
			return core.Errorf(core.CodeConflict, "seq %d does not continue %d", e.Seq, len(log))
		}
	}
	s.events[id] = append(log, evs...)
	seqs := make([]int64, len(evs))
	for i, e := range evs {
		seqs[i] = e.Seq
	}
	s.batches = append(s.batches, seqs)
	return nil
}

// CreateFork makes the memStore an agent.ForkStore: the fork's header,
// seed and note (onNote) under one lock, all or nothing.
func (s *memStore) CreateFork(_ context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.headers[h.ID]; ok {
		return core.ForkError(core.CodeSessionAlreadyExists, "cannot fork session %q into %q: a session with that id already exists", note.Session, h.ID)
	}
	for i, e := range seed {
		if e.Seq != int64(i) {
			return core.Errorf(core.CodeConflict, "write the seed of fork %s: seq %d at %d", h.ID, e.Seq, i)
		}
	}
	if s.onNote != nil {
		if err := s.onNote(note); err != nil {
			return err
		}
	}
	s.headers[h.ID] = h
	s.events[h.ID] = append([]core.Event(nil), seed...)
	return nil
}

// batchOf returns the index of the AppendEvents call that stored seq.
func (s *memStore) batchOf(seq int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.batches {
		if slices.Contains(b, seq) {
			return i
		}
	}
	return -1
}

func (s *memStore) log(id string) []core.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]core.Event(nil), s.events[id]...)
}

// gate is a tool body that blocks until released, so tests choose the
// order in which calls finish without sleeping.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	release map[string]chan struct{}
	started map[string]bool
}

func newGate() *gate {
	g := &gate{release: map[string]chan struct{}{}, started: map[string]bool{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) ch(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.release[key]
	if !ok {
		c = make(chan struct{})
		g.release[key] = c
	}
	return c
}

// open lets the call with key finish.
func (g *gate) open(key string) { close(g.ch(key)) }

func (g *gate) enter(key string) {
	g.mu.Lock()
	g.started[key] = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// waitStarted waits until the call with key entered its body.
func (g *gate) waitStarted(t *testing.T, key string) {
	t.Helper()
	timer := time.AfterFunc(10*time.Second, func() {
		g.mu.Lock()
		g.started["!timeout"] = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer timer.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for !g.started[key] && !g.started["!timeout"] {
		g.cond.Wait()
	}
	if !g.started[key] {
		t.Fatalf("call %q never started", key)
	}
}

type keyArgs struct {
	Key string `json:"key"`
}

type keyValue struct {
	Key string `json:"key"`
}

// gatedTool returns a tool named name whose body waits for its key's
// release (or the call's cancellation).
func gatedTool(name string, g *gate, parallel bool) *core.Tool {
	d := core.Definition[keyArgs, keyValue]{
		Name:        name,
		Description: "Wait for the test to release the call.",
		Parameters:  `{"key": {"type": "string", "required": true}}`,
		Output: core.Output[keyArgs, keyValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "required": true}}}`,
			Render: func(_ keyArgs, v keyValue) (core.Content, error) { return core.Text("released " + v.Key), nil },
		},
		Execute: func(ctx context.Context, a keyArgs, _ *core.Run) (keyValue, error) {
			g.enter(a.Key)
			// A cooperative body: on cancellation it stops and returns
			// what it has; the pipeline turns that into ABORTED.
			select {
			case <-g.ch(a.Key):
			case <-ctx.Done():
			}
			return keyValue(a), nil
		},
	}
	if parallel {
		d.IsConcurrencySafe = func(keyArgs) bool { return true }
	}
	return core.MustDefine(d)
}

// echoTool is an exclusive tool that answers at once; with conclude set it
// concludes the turn, with todo set it emits a todo/write first.
func echoTool(name string, conclude, todo bool) *core.Tool {
	return core.MustDefine(core.Definition[keyArgs, keyValue]{
		Name:       name,
		Parameters: `{"key": {"type": "string", "required": true}}`,
		Output: core.Output[keyArgs, keyValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "required": true}}}`,
			Render: func(_ keyArgs, v keyValue) (core.Content, error) { return core.Text("echo " + v.Key), nil },
			PresentationMeta: func(_ keyArgs, v keyValue) (any, error) {
				return map[string]any{"key": v.Key}, nil
			},
		},
		Execute: func(ctx context.Context, a keyArgs, run *core.Run) (keyValue, error) {
			if todo {
				if err := run.Emit(ctx, core.EventTodoWrite, map[string]any{"todos": []any{
					map[string]any{"content": a.Key, "status": "in_progress"}}}); err != nil {
					return keyValue{}, err
				}
			}
			if conclude {
				run.ConcludeTurn()
			}
			return keyValue(a), nil
		},
	})
}

// harness is one agent over a fresh session.
type harness struct {
	t     *testing.T
	store *memStore
	sess  *core.Session
	reg   *core.Registry
	model *model.Scripted
	agent *agent.Agent
}

func newHarness(t *testing.T, steps []model.Step, tools []*core.Tool, tweak func(*agent.Config)) *harness {
	t.Helper()
	h := &harness{t: t, store: newMemStore(), reg: core.NewRegistry(quiet)}
	if err := h.reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	sess, err := core.NewSession(context.Background(), core.SessionHeader{Cwd: t.TempDir()},
		core.SessionOptions{Store: h.store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h.sess = sess
	h.model = model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: steps}})
	cfg := agent.Config{Session: sess, Tools: h.reg, Model: h.model, System: "test system",
		ChunkInterval: time.Hour, Logger: quiet}
	if tweak != nil {
		tweak(&cfg)
	}
	h.agent, err = agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) turn(ctx context.Context, text string) core.TurnEndReason {
	h.t.Helper()
	r, err := h.agent.Turn(ctx, core.NewUserMessage(core.NewID(), text))
	if err != nil {
		h.t.Fatalf("turn: %v", err)
	}
	return r
}

// check verifies the log's relations and that the store holds exactly the
// session's events.
func (h *harness) check() []core.Event {
	h.t.Helper()
	evs := h.sess.Events()
	if err := core.CheckRelations(evs); err != nil {
		h.t.Errorf("CheckRelations: %v\n%s", err, strings.Join(summary(evs), "\n"))
	}
	if err := core.ValidateLog(h.sess.Header(), evs); err != nil {
		h.t.Errorf("ValidateLog: %v", err)
	}
	stored := h.store.log(h.sess.Header().ID)
	if len(stored) != len(evs) {
		h.t.Errorf("store holds %d events, session %d", len(stored), len(evs))
	}
	return evs
}

// summary renders a log as one line per event: the type plus what
// identifies it (chunk type, call id, result error code, turn/end reason).
func summary(evs []core.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		s := e.Type
		switch e.Type {
		case core.EventAssistantChunk:
			var d core.AssistantChunk
			_ = json.Unmarshal(e.Data, &d)
			s += " " + d.Chunk.Type
			if d.Chunk.BlockType != "" {
				s += ":" + d.Chunk.BlockType
			}
		case core.EventToolCall:
			var d core.ToolCall
			_ = json.Unmarshal(e.Data, &d)
			s += " " + d.CallID
		case core.EventToolResult:
			var d core.ToolResultData
			_ = json.Unmarshal(e.Data, &d)
			s += " " + d.CallID()
			if d.Error != nil {
				s += " " + d.Error.Code
			}
		case core.EventTurnEnd:
			var d core.TurnEnd
			_ = json.Unmarshal(e.Data, &d)
			s += " " + d.Reason.Kind
			if d.Reason.Reason != nil {
				s += ":" + d.Reason.Reason.Kind
			}
			if d.Reason.Error != nil {
				s += ":" + d.Reason.Error.Code
			}
		case core.EventUserMessage:
			var m core.Message
			_ = json.Unmarshal(e.Data, &m)
			s += " " + m.Source.Kind
		case core.EventRequestHeader:
			var d core.RequestHeader
			_ = json.Unmarshal(e.Data, &d)
			s += " " + d.Reason
		}
		out = append(out, s)
	}
	return out
}

func expect(t *testing.T, evs []core.Event, want ...string) {
	t.Helper()
	got := summary(evs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("event sequence:\n%s\n\nwant:\n%s", numbered(got), numbered(want))
	}
}

func numbered(lines []string) string {
	var sb strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&sb, "%3d %s\n", i, l)
	}
	return sb.String()
}

// find returns the events of a type.
func find(evs []core.Event, typ string) []core.Event {
	var out []core.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// transcript renders derived messages compactly: role/source plus the
// block types and call ids.
func transcript(ms []core.Message) []string {
	var out []string
	for _, m := range ms {
		var parts []string
		for _, b := range m.Content {
			switch x := b.(type) {
			case *core.ToolCallBlock:
				parts = append(parts, "call:"+x.ID)
			case *core.ToolResultBlock:
				parts = append(parts, "result:"+x.ToolCallID)
			case *core.TextBlock:
				parts = append(parts, "text:"+x.Text)
			default:
				parts = append(parts, b.BlockType())
			}
		}
		out = append(out, m.Role+"/"+m.Source.Kind+" "+strings.Join(parts, " "))
	}
	return out
}

// waitFor polls cond (for state changed by another goroutine) until it
// holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func call(id, name, args string) model.ScriptCall {
	return model.ScriptCall{ID: id, Name: name, Arguments: args}
}
