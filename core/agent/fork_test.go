package agent_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/core/model"
	"prism/core/notes"
	"prism/core/tools"
)

// namedModels serves a fresh scripted model per session, its script chosen
// by the model's name.
type namedModels map[string][]model.Step

func (m namedModels) New(name string) (model.Model, error) {
	steps, ok := m[name]
	if !ok {
		return nil, core.Errorf(core.CodeInvalid, "no model %q", name)
	}
	return model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: steps}}), nil
}

func (namedModels) Default() string { return "same" }

// countTool answers {key} with the key and how many times any call of it
// ran so far: a result run again differs from the recorded one.
func countTool(runs *atomic.Int64) *core.Tool {
	return core.MustDefine(core.Definition[keyArgs, keyValue]{
		Name:       "count",
		Parameters: `{"key": {"type": "string", "required": true}}`,
		Output: core.Output[keyArgs, keyValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "required": true}}}`,
			Render: func(_ keyArgs, v keyValue) (core.Content, error) { return core.Text(v.Key), nil },
			PresentationMeta: func(_ keyArgs, v keyValue) (any, error) {
				return map[string]any{"key": v.Key}, nil
			},
		},
		Execute: func(_ context.Context, a keyArgs, _ *core.Run) (keyValue, error) {
			n := runs.Add(1)
			return keyValue{Key: fmt.Sprintf("%s#%d", a.Key, n)}, nil
		},
	})
}

func countSteps(keys ...[]string) []model.Step {
	var steps []model.Step
	for _, ks := range keys {
		var calls []model.ScriptCall
		for _, k := range ks {
			calls = append(calls, model.ScriptCall{Name: "count", Arguments: `{"key":"` + k + `"}`})
		}
		steps = append(steps, model.Step{Calls: calls})
	}
	return append(steps, model.Step{Text: "done"})
}

// forkRig is a runner over a memStore whose sessions it can fork, with the
// notes it wrote.
type forkRig struct {
	t     *testing.T
	store *memStore
	l     *eventLog
	r     *agent.Runner
	runs  atomic.Int64

	mu    sync.Mutex
	notes []notes.Input
}

func newForkRig(t *testing.T, models agent.Models) *forkRig {
	g := &forkRig{t: t, store: newMemStore(), l: newEventLog()}
	reg := core.NewRegistry(quiet)
	reg.MustRegister(countTool(&g.runs))
	r, err := agent.NewRunner(agent.RunnerConfig{
		Store: g.store, Tools: reg, Models: models, WorkspaceRoot: t.TempDir(), OnEvent: g.l.on, Logger: quiet,
		Load: func(_ context.Context, id string) (core.SessionHeader, []core.Event, error) {
			g.store.mu.Lock()
			h, ok := g.store.headers[id]
			g.store.mu.Unlock()
			if !ok {
				return h, nil, core.Errorf(core.CodeNotFound, "session %s not found", id)
			}
			return h, g.store.log(id), nil
		},
		PutNote: g.putNote,
	})
	if err != nil {
		t.Fatal(err)
	}
	g.store.onNote = func(in notes.Input) error { return g.putNote(t.Context(), in) }
	t.Cleanup(func() { _ = r.Close() })
	g.r = r
	return g
}

// putNote checks and records a note: the runner's PutNote and its store's
// fork notes.
func (g *forkRig) putNote(_ context.Context, in notes.Input) error {
	if _, _, err := notes.Check(in); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.notes = append(g.notes, in)
	return nil
}

// forkResults returns a session's tool results in log order: call name and
// arguments → content text and meta.
func forkResults(evs []core.Event) []string {
	calls := map[string]string{}
	var out []string
	for _, e := range evs {
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			_ = e.DecodeData(&d)
			calls[d.CallID] = d.Name + " " + d.Arguments
		case core.EventToolResult:
			var d core.ToolResultData
			_ = e.DecodeData(&d)
			p := d.Projection()
			out = append(out, fmt.Sprintf("%s → %s %s err=%v", calls[d.CallID()], p.Content.PlainText(), p.Meta, p.IsError))
		}
	}
	return out
}

func (g *forkRig) source(prompt string) (string, []core.Event) {
	g.t.Helper()
	id, err := g.r.Start(g.t.Context(), agent.StartRequest{Prompt: prompt})
	if err != nil {
		g.t.Fatal(err)
	}
	g.l.waitTurns(g.t, id, 1)
	return id, g.store.log(id)
}

func (g *forkRig) fork(req agent.ForkRequest) (string, []core.Event) {
	g.t.Helper()
	id, err := g.r.Fork(g.t.Context(), req)
	if err != nil {
		g.t.Fatal(err)
	}
	g.l.waitTurns(g.t, id, 1)
	return id, g.store.log(id)
}

// replayedNotes closes the runner (which waits for the notes being written)
// and returns the notes of session id.
func (g *forkRig) replayedNotes(id string) []notes.Input {
	_ = g.r.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []notes.Input
	for _, n := range g.notes {
		if n.Session == id && n.Kind == notes.KindReplayed {
			out = append(out, n)
		}
	}
	// Written in the background: in no particular order.
	slices.SortFunc(out, func(a, b notes.Input) int { return cmp.Compare(*a.AtSeq, *b.AtSeq) })
	return out
}

func at(n int) core.ForkBoundary { return core.ForkBoundary{AtTurn: &n} }

// TestFork_replayOnTheSameModelReplaysEveryCall: a fork at turn 0 with the
// same prompt on the same scripted model asks for the same calls; each is
// answered with the source's recorded result (the tool does not run
// again), with a replayed note naming the source's call.
func TestFork_replayOnTheSameModelReplaysEveryCall(t *testing.T) {
	g := newForkRig(t, namedModels{"same": countSteps([]string{"a", "b"}, []string{"c"})})
	src, srcEvents := g.source("count")
	if g.runs.Load() != 3 {
		t.Fatalf("source ran %d calls", g.runs.Load())
	}
	id, evs := g.fork(agent.ForkRequest{Source: src, Boundary: at(0), Prompt: "count"})
	if got := g.runs.Load(); got != 3 {
		t.Fatalf("the fork ran %d calls for real; want none", got-3)
	}
	want, got := forkResults(srcEvents), forkResults(evs)
	if len(want) != 3 || !reflect.DeepEqual(got, want) {
		t.Fatalf("fork results\n%s\nwant the source's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A replayed result is a tool/result of its own: a new message id.
	ids := map[string]bool{}
	for _, e := range append(find(srcEvents, core.EventToolResult), find(evs, core.EventToolResult)...) {
		var d core.ToolResultData
		_ = e.DecodeData(&d)
		if ids[d.Message.ID] {
			t.Fatalf("message id %s repeats the source's", d.Message.ID)
		}
		ids[d.Message.ID] = true
	}
	ns := g.replayedNotes(id)
	srcCalls, forkCalls := find(srcEvents, core.EventToolCall), find(evs, core.EventToolCall)
	if len(ns) != 3 {
		t.Fatalf("%d replayed notes, want 3: %+v", len(ns), ns)
	}
	for i, n := range ns {
		var d notes.ReplayedData
		if err := json.Unmarshal(n.Data, &d); err != nil {
			t.Fatal(err)
		}
		var fc core.ToolCall
		_ = forkCalls[i].DecodeData(&fc)
		if d.SourceSession != src || d.SourceSeq != srcCalls[i].Seq || n.CallID != fc.CallID || *n.AtSeq != forkCalls[i].Seq {
			t.Fatalf("note %d = %+v %s; want source %s seq %d on call %s at %d", i, n, n.Data, src, srcCalls[i].Seq, fc.CallID, forkCalls[i].Seq)
		}
	}
}

// TestFork_changedCallRunsFromTheFirstDifference: the fork's second call
// differs; the first is replayed, the second and every later one (the
// third repeats the source's, but after a difference) run for real.
func TestFork_changedCallRunsFromTheFirstDifference(t *testing.T) {
	g := newForkRig(t, namedModels{
		"same":    countSteps([]string{"a", "b"}, []string{"c"}),
		"changed": countSteps([]string{"a", "B"}, []string{"c"}),
	})
	src, _ := g.source("count")
	id, evs := g.fork(agent.ForkRequest{Source: src, Boundary: at(0), Prompt: "count differently", Model: "changed"})
	if got := g.runs.Load() - 3; got != 2 {
		t.Fatalf("the fork ran %d calls for real, want 2", got)
	}
	got := forkResults(evs)
	want := []string{
		`count {"key":"a"} → a#1 {"key":"a#1"} err=false`, // replayed: the source's first run
		`count {"key":"B"} → B#4 {"key":"B#4"} err=false`,
		`count {"key":"c"} → c#5 {"key":"c#5"} err=false`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fork results\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ns := g.replayedNotes(id); len(ns) != 1 {
		t.Fatalf("%d replayed notes, want 1", len(ns))
	}
}

// TestFork_liveRunsEveryCall: tools "live" replays nothing.
func TestFork_liveRunsEveryCall(t *testing.T) {
	g := newForkRig(t, namedModels{"same": countSteps([]string{"a"})})
	src, _ := g.source("count")
	id, _ := g.fork(agent.ForkRequest{Source: src, Boundary: at(0), Prompt: "count", Tools: agent.ToolsLive})
	if got := g.runs.Load(); got != 2 {
		t.Fatalf("%d runs, want 2", got)
	}
	if ns := g.replayedNotes(id); len(ns) != 0 {
		t.Fatalf("live fork has replayed notes %+v", ns)
	}
}

// TestFork_seedAndHeader: the fork's stored log starts with the source's
// prefix event for event, then session/end-seed, under a header naming the
// parent and the seed's length; its next turn continues the numbering.
func TestFork_seedAndHeader(t *testing.T) {
	g := newForkRig(t, namedModels{"same": countSteps([]string{"a"})})
	src, _ := g.source("one")
	if err := g.r.Send(t.Context(), src, "two"); err != nil {
		t.Fatal(err)
	}
	g.l.waitTurns(t, src, 2)
	srcEvents := g.store.log(src)
	n, err := core.ForkPrefix(src, srcEvents, at(1))
	if err != nil {
		t.Fatal(err)
	}
	id, evs := g.fork(agent.ForkRequest{Source: src, ID: "the-fork", Boundary: at(1), Prompt: "three", System: "Answer in haiku."})
	if id != "the-fork" {
		t.Fatalf("id %q", id)
	}
	g.store.mu.Lock()
	h := g.store.headers[id]
	g.store.mu.Unlock()
	if h.ParentSession != src || h.SeedLength == nil || *h.SeedLength != int64(n) || h.Origin != "" {
		t.Fatalf("fork header %+v", h)
	}
	if !reflect.DeepEqual(evs[:n], srcEvents[:n]) {
		t.Fatal("the fork's seed differs from the source's prefix")
	}
	if evs[n].Type != core.EventSessionEndSeed {
		t.Fatalf("event %d is %s, want session/end-seed", n, evs[n].Type)
	}
	// The source names its fork in a fork note, from the boundary on.
	g.mu.Lock()
	var forkNotes []notes.Input
	for _, in := range g.notes {
		if in.Kind == notes.KindFork {
			forkNotes = append(forkNotes, in)
		}
	}
	g.mu.Unlock()
	if len(forkNotes) != 1 || forkNotes[0].Session != src || *forkNotes[0].AtSeq != int64(n-1) ||
		string(forkNotes[0].Data) != fmt.Sprintf(`{"session":"the-fork","seedLength":%d}`, n) {
		t.Fatalf("fork notes %+v", forkNotes)
	}
	var ts core.TurnStart
	_ = find(evs[n:], core.EventTurnStart)[0].DecodeData(&ts)
	if ts.Turn != 2 {
		t.Fatalf("the fork's first turn is %d, want 2", ts.Turn)
	}
	// The fork's own system prompt is the request header's from its
	// first request on (the source's said the default one).
	var rh struct {
		Reason string           `json:"reason"`
		Header core.EpochHeader `json:"header"`
	}
	hs := find(evs[n:], core.EventRequestHeader)
	if len(hs) == 0 {
		t.Fatal("the fork logged no request/header")
	}
	if err := hs[0].DecodeData(&rh); err != nil || rh.Header.System != "Answer in haiku." {
		t.Fatalf("the fork's request header %s (%v)", hs[0].Data, err)
	}
	var srcHeader struct {
		Header core.EpochHeader `json:"header"`
	}
	_ = find(srcEvents, core.EventRequestHeader)[0].DecodeData(&srcHeader)
	if srcHeader.Header.System == "Answer in haiku." {
		t.Fatal("the source had the fork's system prompt")
	}
}

// TestFork_errors: dsh's codes with their texts.
func TestFork_errors(t *testing.T) {
	g := newForkRig(t, namedModels{"same": countSteps([]string{"a"})})
	src, _ := g.source("one")
	for _, tc := range []struct {
		name string
		req  agent.ForkRequest
		code string
		text string
	}{
		{"missing session", agent.ForkRequest{Source: "nope", Boundary: at(1)}, core.CodeSessionNotFound, `cannot fork session "nope": it does not exist`},
		{"existing id", agent.ForkRequest{Source: src, ID: src, Boundary: at(1)}, core.CodeSessionAlreadyExists, fmt.Sprintf(`cannot fork session %q into %q: a session with that id already exists`, src, src)},
		{"past the end", agent.ForkRequest{Source: src, Boundary: at(2)}, core.CodeInvalidBoundary, "past the end, the session has 1 completed turns"},
		{"bad tools", agent.ForkRequest{Source: src, Boundary: at(1), Tools: "maybe"}, core.CodeInvalid, `tools must be "replay" or "live", not "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.r.Fork(t.Context(), tc.req)
			if core.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v (%s); want %s %q", err, core.ErrorCode(err), tc.code, tc.text)
			}
		})
	}
	g.store.mu.Lock()
	defer g.store.mu.Unlock()
	if len(g.store.headers) != 1 {
		t.Fatalf("failed forks left sessions behind: %d stored", len(g.store.headers))
	}
}

// demoModels serves the scripted demo, which seeds its own workspace.
type demoModels struct{}

func (demoModels) New(string) (model.Model, error) { return model.NewDemo(model.Pacing{}), nil }
func (demoModels) Default() string                 { return "demo" }

// TestFork_rebuildsTheDemoWorkspaceAtTheBoundary: a fork of the demo
// gets a freshly seeded workspace changed as the source's write and edit
// calls changed it up to the boundary — after turn 1, the changelog and
// the friendlier greeting; at turn 0, neither.
func TestFork_rebuildsTheDemoWorkspaceAtTheBoundary(t *testing.T) {
	builtins, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(quiet)
	reg.MustRegister(builtins...)
	store := newMemStore()
	h, events := agenttest.DemoLog(t, 1767225600000)
	h.ID = "demo"
	if err := store.CreateSession(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if err := store.AppendEvents(t.Context(), "demo", events); err != nil {
		t.Fatal(err)
	}
	r, err := agent.NewRunner(agent.RunnerConfig{Store: store, Tools: reg, Models: demoModels{}, WorkspaceRoot: t.TempDir(), Logger: quiet,
		Load: func(context.Context, string) (core.SessionHeader, []core.Event, error) {
			return h, store.log("demo"), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for _, tc := range []struct {
		turn      int
		changelog bool
		greeting  string
	}{{1, true, "Ahoy, %s! Welcome aboard."}, {0, false, "Hello, %s!"}} {
		id, err := r.Fork(t.Context(), agent.ForkRequest{Source: "demo", Boundary: at(tc.turn)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Status(id)
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(filepath.Join(st.Workspace, "CHANGELOG.md"))
		greet, err := os.ReadFile(filepath.Join(st.Workspace, "greet", "greet.go"))
		if err != nil {
			t.Fatal(err)
		}
		if (statErr == nil) != tc.changelog || !strings.Contains(string(greet), tc.greeting) {
			t.Errorf("fork at turn %d: changelog %v, greet.go\n%s\nwant changelog %v and %q", tc.turn, statErr == nil, greet, tc.changelog, tc.greeting)
		}
	}
}
