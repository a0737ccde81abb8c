package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/notes"
	"prism/core/tools"
)

// familyModels serves a scripted model whose script has children (the
// scripts of the subagents it delegates to, by description).
type familyModels struct{ script model.Script }

func (m familyModels) New(name string) (model.Model, error) {
	if name == "nope" {
		return nil, core.Errorf(core.CodeInvalid, "unknown model %q", name)
	}
	return model.NewScripted(model.ScriptedConfig{Script: m.script}), nil
}

func (familyModels) Default() string { return "family" }

// linkLog collects the link notes a runner writes.
type linkLog struct {
	mu  sync.Mutex
	ins []notes.Input
}

func (l *linkLog) put(_ context.Context, in notes.Input) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ins = append(l.ins, in)
	return nil
}

func (l *linkLog) all() []notes.Input {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]notes.Input(nil), l.ins...)
}

// family is a runner whose registry holds the subagent tool and extra.
type family struct {
	r     *agent.Runner
	store *memStore
	log   *eventLog
	links *linkLog
}

func newFamily(t *testing.T, script model.Script, depth int, extra ...*core.Tool) *family {
	t.Helper()
	f := &family{store: newMemStore(), log: newEventLog(), links: &linkLog{}}
	reg := core.NewRegistry(quiet)
	reg.MustRegister(extra...)
	r, err := agent.NewRunner(agent.RunnerConfig{
		Store: f.store, Tools: reg, Models: familyModels{script}, WorkspaceRoot: t.TempDir(),
		OnEvent: f.log.on, Logger: quiet, MaxDelegationDepth: depth, Links: f.links.put,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(r.SubagentTool())
	t.Cleanup(func() { _ = r.Close() })
	f.r = r
	return f
}

func subagentCall(id, description, prompt string, more string) model.ScriptCall {
	return model.ScriptCall{ID: id, Name: tools.SubagentName,
		Arguments: fmt.Sprintf(`{"description":%q,"prompt":%q%s}`, description, prompt, more)}
}

// results returns the tool results of a log by call id.
func results(t *testing.T, evs []core.Event) map[string]core.ToolResultData {
	t.Helper()
	out := map[string]core.ToolResultData{}
	for _, e := range evs {
		if e.Type != core.EventToolResult {
			continue
		}
		var r core.ToolResultData
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatal(err)
		}
		out[r.CallID()] = r
	}
	return out
}

func resultText(r core.ToolResultData) (string, bool) {
	b := r.Message.Content[0].(*core.ToolResultBlock)
	var sb strings.Builder
	for _, c := range b.Content {
		if t, ok := c.(*core.TextBlock); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String(), b.IsError
}

// children returns the stored sessions whose parent is id, by label.
func (f *family) children(t *testing.T, parent string) map[string]core.SessionHeader {
	t.Helper()
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	out := map[string]core.SessionHeader{}
	for id, h := range f.store.headers {
		if h.ParentSession != parent {
			continue
		}
		evs := f.store.events[id]
		if len(evs) == 0 || evs[0].Type != core.EventSubagentDescr {
			t.Errorf("child %s does not start with subagent/descriptor: %v", id, evs)
			continue
		}
		var d agent.SubagentDescriptor
		if err := json.Unmarshal(evs[0].Data, &d); err != nil || d.Version != 2 || d.Mode != "one-shot" {
			t.Errorf("child %s descriptor = %s", id, evs[0].Data)
		}
		out[d.Label] = h
	}
	return out
}

// TestSubagentParallelOneFailing: a parent delegates two children in one
// step; they run at the same time (each waits in a gated call until both
// started), one answers and one fails. The answer is the first call's
// result, the failure the second's error; each child is a session of its
// own (header, descriptor, depth 1, the parent's workspace) linked by a
// note on its spawning call at the call's seq.
func TestSubagentParallelOneFailing(t *testing.T) {
	g := newGate()
	script := model.Script{
		Steps: []model.Step{
			{Calls: []model.ScriptCall{
				subagentCall("c_ok", "count files", "Count the files.", ""),
				subagentCall("c_bad", "break things", "Fail.", ""),
			}},
			{Text: "both done"},
		},
		Children: map[string]model.Script{
			"count files": {Steps: []model.Step{
				{Calls: []model.ScriptCall{call("w1", "wait", `{"key":"ok"}`)}},
				{Text: "there are 3 files"},
			}},
			"break things": {Steps: []model.Step{
				{Calls: []model.ScriptCall{call("w2", "wait", `{"key":"bad"}`)}},
				{Fail: &core.LLMFailure{Message: "the model fell over", Code: "PROVIDER_ERROR"}},
			}},
		},
	}
	f := newFamily(t, script, 0, gatedTool("wait", g, true))
	id, err := f.r.Start(t.Context(), agent.StartRequest{Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "ok")
	g.waitStarted(t, "bad") // both children are running at once
	g.open("ok")
	g.open("bad")
	evs := f.log.waitTurns(t, id, 1)
	res := results(t, evs)
	if text, isErr := resultText(res["c_ok"]); isErr || text != "there are 3 files" {
		t.Errorf("the answering child's result = %q (error %v), want its final text", text, isErr)
	}
	if text, isErr := resultText(res["c_bad"]); !isErr || !strings.Contains(text, "failed") || !strings.Contains(text, "the model fell over") {
		t.Errorf("the failing child's result = %q (error %v), want an error naming its failure", text, isErr)
	}
	kids := f.children(t, id)
	if len(kids) != 2 {
		t.Fatalf("children = %v, want 2", kids)
	}
	parent, _ := f.r.Session(id)
	for label, h := range kids {
		if h.Origin != core.OriginSubagent || h.DelegationDepth == nil || *h.DelegationDepth != 1 || h.Cwd != parent.Header().Cwd || h.ChildOf() != id {
			t.Errorf("child %q header = %+v", label, h)
		}
		if err := core.ValidateLog(h, f.store.log(h.ID)); err != nil {
			t.Errorf("child %q log: %v", label, err)
		}
	}
	links := f.links.all()
	if len(links) != 2 {
		t.Fatalf("link notes = %+v, want 2", links)
	}
	callSeq := map[string]int64{}
	for _, e := range evs {
		var c core.ToolCall
		if e.Type == core.EventToolCall && json.Unmarshal(e.Data, &c) == nil {
			callSeq[c.CallID] = e.Seq
		}
	}
	for _, in := range links {
		d, err := notes.ParseLink(in.Data)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"c_ok": kids["count files"].ID, "c_bad": kids["break things"].ID}[in.CallID]
		if in.Session != id || in.Kind != notes.KindLink || d.Child != want || d.Background || d.Inferred || in.AtSeq == nil || *in.AtSeq != callSeq[in.CallID] {
			t.Errorf("link note = %+v %+v, want call %s → child %s at seq %d", in, d, in.CallID, want, callSeq[in.CallID])
		}
	}
}

// TestSubagentCancelMidChild: cancelling the parent's turn while its
// child works cancels the child: the child's turn ends aborted with
// {kind: parent}, the parent's call is an error, its turn aborted (user).
func TestSubagentCancelMidChild(t *testing.T) {
	g := newGate()
	script := model.Script{
		Steps:    []model.Step{{Calls: []model.ScriptCall{subagentCall("c1", "hold on", "Wait.", "")}}, {Text: "never"}},
		Children: map[string]model.Script{"hold on": {Steps: []model.Step{{Calls: []model.ScriptCall{call("w", "wait", `{"key":"hold"}`)}}, {Text: "never"}}}},
	}
	f := newFamily(t, script, 0, gatedTool("wait", g, true))
	id, err := f.r.Start(t.Context(), agent.StartRequest{Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "hold")
	if err := f.r.Cancel(id); err != nil {
		t.Fatal(err)
	}
	evs := f.log.waitTurns(t, id, 1)
	kid := f.children(t, id)["hold on"]
	kevs := f.log.waitTurns(t, kid.ID, 1)
	end := lastTurnEnd(t, kevs)
	if end.Kind != core.TurnAborted || end.Reason == nil || end.Reason.Kind != agent.CauseParent {
		t.Errorf("child turn end = %+v, want aborted {kind: parent}", end)
	}
	if pend := lastTurnEnd(t, evs); pend.Kind != core.TurnAborted || pend.Reason == nil || pend.Reason.Kind != agent.CauseUser {
		t.Errorf("parent turn end = %+v, want aborted {kind: user}", pend)
	}
	if r, ok := results(t, evs)["c1"]; !ok {
		t.Error("the subagent call has no result")
	} else if _, isErr := resultText(r); !isErr {
		t.Error("the cancelled subagent call is not an error")
	}
}

func lastTurnEnd(t *testing.T, evs []core.Event) core.TurnEndReason {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == core.EventTurnEnd {
			var te core.TurnEnd
			if err := json.Unmarshal(evs[i].Data, &te); err != nil {
				t.Fatal(err)
			}
			return te.Reason
		}
	}
	t.Fatal("no turn/end")
	return core.TurnEndReason{}
}

// TestSubagentDepthCap: with a cap of 1 a child may not delegate: its
// call is a tool error naming the cap, and no grandchild is created.
func TestSubagentDepthCap(t *testing.T) {
	script := model.Script{
		Steps: []model.Step{{Calls: []model.ScriptCall{subagentCall("c1", "level one", "Go deeper.", "")}}, {Text: "ok"}},
		Children: map[string]model.Script{"level one": {
			Steps:    []model.Step{{Calls: []model.ScriptCall{subagentCall("c2", "level two", "Deeper.", "")}}, {Text: "could not go deeper"}},
			Children: map[string]model.Script{"level two": {Steps: []model.Step{{Text: "too deep"}}}},
		}},
	}
	f := newFamily(t, script, 1)
	id, err := f.r.Start(t.Context(), agent.StartRequest{Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	evs := f.log.waitTurns(t, id, 1)
	if text, isErr := resultText(results(t, evs)["c1"]); isErr || text != "could not go deeper" {
		t.Errorf("level one's answer = %q (error %v)", text, isErr)
	}
	kid := f.children(t, id)["level one"]
	kevs := f.log.waitTurns(t, kid.ID, 1)
	text, isErr := resultText(results(t, kevs)["c2"])
	if !isErr || !strings.Contains(text, "delegation depth cap reached") || !strings.Contains(text, "at most 1 deep") {
		t.Errorf("the call past the cap = %q (error %v), want a tool error naming the cap", text, isErr)
	}
	if g := f.children(t, kid.ID); len(g) != 0 {
		t.Errorf("a grandchild was created past the cap: %v", g)
	}
}

// TestSubagentFiftyInOneStep: fifty children of one step all run, answer
// and are linked.
func TestSubagentFiftyInOneStep(t *testing.T) {
	const n = 50
	script := model.Script{Children: map[string]model.Script{}}
	var calls []model.ScriptCall
	for i := range n {
		d := fmt.Sprintf("task %02d", i)
		calls = append(calls, subagentCall(fmt.Sprintf("c%02d", i), d, "Do it.", ""))
		script.Children[d] = model.Script{Steps: []model.Step{{Text: "done " + d}}}
	}
	script.Steps = []model.Step{{Calls: calls}, {Text: "all done"}}
	f := newFamily(t, script, 0)
	id, err := f.r.Start(t.Context(), agent.StartRequest{Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	evs := f.log.waitTurns(t, id, 1)
	res := results(t, evs)
	for i := range n {
		if text, isErr := resultText(res[fmt.Sprintf("c%02d", i)]); isErr || text != fmt.Sprintf("done task %02d", i) {
			t.Errorf("call %d = %q (error %v)", i, text, isErr)
		}
	}
	if k := f.children(t, id); len(k) != n {
		t.Errorf("%d children, want %d", len(k), n)
	}
	if l := f.links.all(); len(l) != n {
		t.Errorf("%d link notes, want %d", len(l), n)
	}
}

// TestSubagentNeverStarts: a child that cannot start (an unknown model, a
// tool its parent lacks) fails its call with an error naming why; no
// child session is left.
func TestSubagentNeverStarts(t *testing.T) {
	script := model.Script{Steps: []model.Step{
		{Calls: []model.ScriptCall{
			subagentCall("m", "bad model", "x", `,"model":"nope"`),
			subagentCall("t", "bad tools", "x", `,"tools":["read"]`),
		}},
		{Text: "ok"},
	}}
	f := newFamily(t, script, 0)
	id, err := f.r.Start(t.Context(), agent.StartRequest{Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	res := results(t, f.log.waitTurns(t, id, 1))
	if text, isErr := resultText(res["m"]); !isErr || !strings.Contains(text, `model "nope"`) {
		t.Errorf("unknown model = %q (error %v)", text, isErr)
	}
	if text, isErr := resultText(res["t"]); !isErr || !strings.Contains(text, `tool "read" is not one of the available tools`) {
		t.Errorf("unknown tool = %q (error %v)", text, isErr)
	}
	if k := f.children(t, id); len(k) != 0 {
		t.Errorf("children left: %v", k)
	}
}

// TestSubagentBackground: background returns the child's id at once; the
// parent's turn ends while the child still works, and the child finishes
// on its own.
func TestSubagentBackground(t *testing.T) {
	g := newGate()
	script := model.Script{
		Steps:    []model.Step{{Calls: []model.ScriptCall{subagentCall("c1", "long job", "Work.", `,"background":true`)}}, {Text: "started it"}},
		Children: map[string]model.Script{"long job": {Steps: []model.Step{{Calls: []model.ScriptCall{call("w", "wait", `{"key":"job"}`)}}, {Text: "job done"}}}},
	}
	f := newFamily(t, script, 0, gatedTool("wait", g, true))
	id, err := f.r.Start(t.Context(), agent.StartRequest{Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	evs := f.log.waitTurns(t, id, 1) // the child is still held in its gated call
	kid := f.children(t, id)["long job"]
	if text, isErr := resultText(results(t, evs)["c1"]); isErr || !strings.Contains(text, kid.ID) {
		t.Errorf("background result = %q (error %v), want the child's id", text, isErr)
	}
	if d, _ := notes.ParseLink(f.links.all()[0].Data); !d.Background || d.Child != kid.ID {
		t.Errorf("link = %+v", d)
	}
	g.open("job")
	kevs := f.log.waitTurns(t, kid.ID, 1)
	if end := lastTurnEnd(t, kevs); end.Kind != core.TurnCompleted {
		t.Errorf("background child ended %+v", end)
	}
}
