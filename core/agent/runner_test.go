package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/tools"
)

// eventLog collects OnEvent deliveries per session.
type eventLog struct {
	mu     sync.Mutex
	events map[string][]core.Event
	ended  map[string]int // turn/end count
	cond   *sync.Cond
	// atTurnEnd, if set, runs on the appending goroutine with each
	// turn/end, before the turn returns.
	atTurnEnd func(id string)
}

func newEventLog() *eventLog {
	l := &eventLog{events: map[string][]core.Event{}, ended: map[string]int{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *eventLog) on(id string, e core.Event) {
	if e.Type == core.EventTurnEnd && l.atTurnEnd != nil {
		l.atTurnEnd(id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[id] = append(l.events[id], e)
	if e.Type == core.EventTurnEnd {
		l.ended[id]++
		l.cond.Broadcast()
	}
}

// waitTurns waits until the session ended n turns.
func (l *eventLog) waitTurns(t *testing.T, id string, n int) []core.Event {
	t.Helper()
	done := make(chan struct{})
	go func() {
		l.mu.Lock()
		for l.ended[id] < n {
			l.cond.Wait()
		}
		l.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-t.Context().Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]core.Event(nil), l.events[id]...)
}

// scriptModels serves a fresh scripted model per session.
type scriptModels struct{ steps []model.Step }

func (m scriptModels) New(string) (model.Model, error) {
	return model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: m.steps}}), nil
}

func (scriptModels) Default() string { return "script" }

func newRunner(t *testing.T, models agent.Models, reg *core.Registry, store core.EventStore, l *eventLog) *agent.Runner {
	t.Helper()
	r, err := agent.NewRunner(agent.RunnerConfig{
		Store: store, Tools: reg, Models: models, WorkspaceRoot: t.TempDir(),
		OnEvent: l.on, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestRunnerDemoEndToEnd plays the built-in demo through the real tools,
// with and without bash, and checks the log it leaves.
func TestRunnerDemoEndToEnd(t *testing.T) {
	for _, bash := range []bool{true, false} {
		t.Run(map[bool]string{true: "bash", false: "no-bash"}[bash], func(t *testing.T) {
			builtins, err := tools.Builtins(tools.Options{AllowBash: bash})
			if err != nil {
				t.Fatal(err)
			}
			reg := core.NewRegistry(quiet)
			reg.MustRegister(builtins...)
			store := newMemStore()
			l := newEventLog()
			// The tools change the seeded workspace for real: read it as the
			// first turn ends (the runner removes it once the script is
			// played out).
			var greet []byte
			var greetErr, changelogErr error
			var r *agent.Runner
			l.atTurnEnd = func(id string) {
				if l.ended[id] > 0 {
					return
				}
				st, _ := r.Status(id)
				greet, greetErr = os.ReadFile(filepath.Join(st.Workspace, "greet", "greet.go"))
				_, changelogErr = os.Stat(filepath.Join(st.Workspace, "CHANGELOG.md"))
			}
			r = newRunner(t, model.NewCatalog(model.CatalogConfig{DemoPacing: &model.Pacing{}}), reg, store, l)
			reg.MustRegister(r.SubagentTool())
			id, err := r.Start(t.Context(), agent.StartRequest{Prompt: "Show me around."})
			if err != nil {
				t.Fatal(err)
			}
			evs := l.waitTurns(t, id, 1)
			if err := core.CheckRelations(evs); err != nil {
				t.Fatalf("CheckRelations: %v", err)
			}
			// OnEvent saw exactly the stored log, in order.
			stored := store.log(id)
			if len(stored) != len(evs) {
				t.Fatalf("OnEvent saw %d events, the store holds %d", len(evs), len(stored))
			}
			for i := range evs {
				if evs[i].Seq != int64(i) || stored[i].Seq != int64(i) || string(evs[i].Data) != string(stored[i].Data) {
					t.Fatalf("event %d differs: %s vs %s", i, evs[i].Data, stored[i].Data)
				}
			}
			waitFor(t, "the turn's status", func() bool { st, _ := r.Status(id); return st.LastTurn != nil })
			st, err := r.Status(id)
			if err != nil || st.LastTurn == nil || st.LastTurn.Kind != core.TurnCompleted {
				t.Fatalf("status = %+v, %v", st, err)
			}
			codes := map[string][]string{}
			var results []core.ToolResultData
			for _, e := range evs {
				if e.Type == core.EventToolResult {
					var d core.ToolResultData
					_ = json.Unmarshal(e.Data, &d)
					results = append(results, d)
				}
			}
			calls := find(evs, core.EventToolCall)
			if len(calls) != len(results) || len(calls) != 16 {
				t.Fatalf("calls %d, results %d, want 16 each", len(calls), len(results))
			}
			for i, c := range calls {
				var tc core.ToolCall
				_ = json.Unmarshal(c.Data, &tc)
				code := "ok"
				if results[i].Error != nil {
					code = results[i].Error.Code
				} else if results[i].Projection().IsError {
					code = "error"
				}
				codes[tc.Name] = append(codes[tc.Name], code)
				if code == "ok" && tc.Name != "bash" && tc.Name != "note" && len(results[i].Meta) == 0 {
					t.Errorf("%s result has no meta", tc.Name)
				}
			}
			want := map[string][]string{
				"note": {"ok"}, "glob": {"ok"}, "grep": {"ok"},
				"read":  {"ok", "ok", "ok", "INVALID_ARGS", "INVALID_ARGS", "FS_NOT_FOUND"},
				"write": {"ok"}, "edit": {"ok", "ok"},
				"web_search": {"UNKNOWN_TOOL"},
				"bash":       {"ok", "ok"},
				"subagent":   {"ok"},
			}
			if !bash {
				want["bash"] = []string{"UNKNOWN_TOOL", "UNKNOWN_TOOL"}
			}
			for name, w := range want {
				if !slices.Equal(codes[name], w) {
					t.Errorf("%s results = %v, want %v", name, codes[name], w)
				}
			}
			if bash {
				var outs []string
				for i, c := range calls {
					var tc core.ToolCall
					_ = json.Unmarshal(c.Data, &tc)
					if tc.Name == "bash" {
						outs = append(outs, results[i].Projection().Content.PlainText())
					}
				}
				if !strings.Contains(outs[0], "Ahoy") || !strings.Contains(outs[1], "[exit code: 1]") {
					t.Errorf("bash outputs = %q", outs)
				}
			}
			if greetErr != nil || !strings.Contains(string(greet), "Ahoy, %s! Welcome aboard.") {
				t.Errorf("greet.go at the end of the turn = %q, %v", greet, greetErr)
			}
			if changelogErr != nil {
				t.Errorf("CHANGELOG.md at the end of the turn: %v", changelogErr)
			}
			// A follow-up after the script runs out is answered.
			if err := r.Send(t.Context(), id, "thanks!"); err != nil {
				t.Fatal(err)
			}
			evs = l.waitTurns(t, id, 2)
			if err := core.CheckRelations(evs); err != nil {
				t.Fatal(err)
			}
			if last := summary(evs[len(evs)-1:]); last[0] != "turn/end completed" {
				t.Errorf("follow-up ended %q", last)
			}
			// The script was played out by the first turn: its workspace was
			// removed before the follow-up's turn began.
			if _, err := os.Stat(st.Workspace); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the demo workspace %s outlived its script: %v", st.Workspace, err)
			}
		})
	}
}

// TestRunnerQueueCancelClose: a message sent during a turn is queued;
// Cancel aborts the running turn and drops the queue; Close disposes.
func TestRunnerQueueCancelClose(t *testing.T) {
	g := newGate()
	reg := core.NewRegistry(quiet)
	reg.MustRegister(gatedTool("wait", g, true))
	steps := []model.Step{
		{Calls: []model.ScriptCall{{Name: "wait", Arguments: `{"key":"first"}`}}},
		{Text: "first done"},
		{Calls: []model.ScriptCall{{Name: "wait", Arguments: `{"key":"second"}`}}}, // cancelled in its tool
		{Calls: []model.ScriptCall{{Name: "wait", Arguments: `{"key":"third"}`}}},
	}
	l := newEventLog()
	store := newMemStore()
	r := newRunner(t, scriptModels{steps}, reg, store, l)
	id, err := r.Start(t.Context(), agent.StartRequest{Prompt: "one"})
	if err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "first")
	if err := r.Send(t.Context(), id, "two"); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.Status(id); !st.Running || st.Queued != 1 {
		t.Errorf("status while running = %+v", st)
	}
	g.open("first")
	g.waitStarted(t, "second") // the queued message opened turn 2
	if err := r.Send(t.Context(), id, "three"); err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel(id); err != nil {
		t.Fatal(err)
	}
	evs := l.waitTurns(t, id, 2)
	ends := find(evs, core.EventTurnEnd)
	if got := summary(ends); !slices.Equal(got, []string{"turn/end completed", "turn/end aborted:user"}) {
		t.Errorf("turn ends = %q", got)
	}
	waitFor(t, "the session to go idle", func() bool { st, _ := r.Status(id); return !st.Running })
	if st, _ := r.Status(id); st.Queued != 0 {
		t.Errorf("the queue survived Cancel: %+v", st)
	}
	// A new message runs again; Close disposes of the running turn.
	if err := r.Send(t.Context(), id, "four"); err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "third")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	evs = l.waitTurns(t, id, 3)
	if last := summary(evs[len(evs)-1:]); last[0] != "turn/end aborted:disposed" {
		t.Errorf("after Close: %q", last)
	}
	if err := core.CheckRelations(evs); err != nil {
		t.Error(err)
	}
	if _, err := r.Start(t.Context(), agent.StartRequest{Prompt: "late"}); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("Start after Close: %v", err)
	}
	if err := r.Send(t.Context(), id, "late"); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("Send after Close: %v", err)
	}
}

// TestRunnerSessionsIndependent: a session blocked in a tool does not hold
// up another one.
func TestRunnerSessionsIndependent(t *testing.T) {
	g := newGate()
	reg := core.NewRegistry(quiet)
	reg.MustRegister(gatedTool("wait", g, false))
	l := newEventLog()
	blocked := scriptModels{[]model.Step{{Calls: []model.ScriptCall{{Name: "wait", Arguments: `{"key":"stuck"}`}}}, {Text: "ok"}}}
	r := newRunner(t, blocked, reg, newMemStore(), l)
	a, err := r.Start(t.Context(), agent.StartRequest{Prompt: "block"})
	if err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "stuck")
	r2 := newRunner(t, scriptModels{[]model.Step{{Text: "quick"}}}, reg, newMemStore(), l)
	b, err := r2.Start(t.Context(), agent.StartRequest{Prompt: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	// Same runner, second session, while the first one is blocked.
	c, err := r.Start(t.Context(), agent.StartRequest{Prompt: "block too"})
	if err != nil {
		t.Fatal(err)
	}
	l.waitTurns(t, b, 1)
	g.open("stuck") // c's call has the same key: both are released
	l.waitTurns(t, a, 1)
	l.waitTurns(t, c, 1)
	if got := len(r.Sessions()); got != 2 {
		t.Errorf("sessions = %d", got)
	}
}

func TestRunnerErrors(t *testing.T) {
	reg := core.NewRegistry(quiet)
	l := newEventLog()
	r := newRunner(t, model.NewCatalog(model.CatalogConfig{DemoPacing: &model.Pacing{}}), reg, nil, l)
	ctx := t.Context()
	if _, err := r.Start(ctx, agent.StartRequest{Prompt: "  "}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("empty prompt: %v", err)
	}
	if _, err := r.Start(ctx, agent.StartRequest{Prompt: "x", Workspace: t.TempDir()}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("demo with a workspace: %v", err)
	}
	if _, err := r.Start(ctx, agent.StartRequest{Prompt: "x", Model: "deepseek-chat"}); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("keyless model: %v", err)
	}
	if err := r.Send(ctx, "nope", "x"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("unknown session: %v", err)
	}
	if err := r.Cancel("nope"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("cancel unknown: %v", err)
	}
	allowed := t.TempDir()
	r2, err := agent.NewRunner(agent.RunnerConfig{Tools: reg, Models: scriptModels{[]model.Step{{Text: "hi"}}},
		WorkspaceRoot: t.TempDir(), AllowedWorkspaces: []string{allowed}, OnEvent: l.on, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r2.Close() })
	if _, err := r2.Start(ctx, agent.StartRequest{Prompt: "x", Workspace: filepath.Join(allowed, "missing")}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("missing workspace: %v", err)
	}
	if _, err := r2.Start(ctx, agent.StartRequest{Prompt: "x", Workspace: t.TempDir()}); core.ErrorCode(err) != core.CodeInvalid ||
		!strings.Contains(err.Error(), "not inside an allowed workspace root") {
		t.Errorf("workspace outside the allowed roots: %v", err)
	}
	if _, err := r.Start(ctx, agent.StartRequest{Prompt: "x", Model: "other", Workspace: allowed}); err == nil {
		t.Error("a runner without allowed roots accepted a requested workspace")
	}
	ws := filepath.Join(allowed, "project")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := r2.Start(ctx, agent.StartRequest{Prompt: "x", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	l.waitTurns(t, id, 1)
	sess, _ := r2.Session(id)
	real, _ := filepath.EvalSymlinks(ws)
	if sess.Header().Cwd != real {
		t.Errorf("cwd = %q, want %q", sess.Header().Cwd, real)
	}
	if err := r2.Cancel(id); err != nil { // idle: nothing to do
		t.Errorf("cancel idle: %v", err)
	}
}

// TestRunnerStartsUnderLoad is a smoke test of many concurrent sessions.
func TestRunnerManySessions(t *testing.T) {
	reg := core.NewRegistry(quiet)
	reg.MustRegister(tools.NewNote())
	l := newEventLog()
	steps := []model.Step{{Calls: []model.ScriptCall{{Name: "note", Arguments: `{"title":"a"}`}, {Name: "note", Arguments: `{"title":"b"}`}}}, {Text: "ok"}}
	r := newRunner(t, scriptModels{steps}, reg, newMemStore(), l)
	var ids []string
	for range 20 {
		id, err := r.Start(context.Background(), agent.StartRequest{Prompt: "go"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		evs := l.waitTurns(t, id, 1)
		if err := core.CheckRelations(evs); err != nil {
			t.Fatal(err)
		}
		if last := summary(evs[len(evs)-1:]); last[0] != "turn/end completed" {
			t.Errorf("%s ended %q", id, last)
		}
	}
}

// blockingStore holds the append carrying a user/message until released.
type blockingStore struct {
	*memStore
	arrived chan struct{} // closed when the user/message append arrives
	release chan struct{}
	fail    error // returned for the user/message append once released
	once    sync.Once
}

func (s *blockingStore) AppendEvents(ctx context.Context, id string, evs []core.Event) error {
	for _, e := range evs {
		if e.Type == core.EventUserMessage {
			s.once.Do(func() { close(s.arrived) })
			<-s.release
			if s.fail != nil {
				return s.fail
			}
		}
	}
	return s.memStore.AppendEvents(ctx, id, evs)
}

// TestRunnerStartAcknowledgesTheLoggedPrompt: Start returns the id only
// once the first user message is committed — an acknowledged session
// never loses its prompt to a crash — and fails when the first turn ends
// without logging it.
func TestRunnerStartAcknowledgesTheLoggedPrompt(t *testing.T) {
	steps := []model.Step{{Text: "hello"}}
	reg := core.NewRegistry(quiet)

	t.Run("logged", func(t *testing.T) {
		store := &blockingStore{memStore: newMemStore(), arrived: make(chan struct{}), release: make(chan struct{})}
		r := newRunner(t, scriptModels{steps}, reg, store, newEventLog())
		type result struct {
			id  string
			err error
		}
		done := make(chan result, 1)
		go func() {
			id, err := r.Start(t.Context(), agent.StartRequest{Prompt: "remember me"})
			done <- result{id, err}
		}()
		<-store.arrived
		select {
		case res := <-done:
			t.Fatalf("Start returned (%q, %v) while the prompt was not yet committed", res.id, res.err)
		default:
		}
		close(store.release)
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		var prompts []string
		for _, e := range store.log(res.id) {
			if e.Type == core.EventUserMessage {
				var m core.Message
				if err := json.Unmarshal(e.Data, &m); err != nil {
					t.Fatal(err)
				}
				prompts = append(prompts, m.Content.PlainText())
			}
		}
		if len(prompts) == 0 || prompts[0] != "remember me" {
			t.Errorf("stored user messages at acknowledgement = %q, want the prompt", prompts)
		}
	})

	t.Run("not logged", func(t *testing.T) {
		store := &blockingStore{memStore: newMemStore(), arrived: make(chan struct{}), release: make(chan struct{}),
			fail: core.Errorf(core.CodeUnavailable, "store: disk on fire")}
		close(store.release)
		r := newRunner(t, scriptModels{steps}, reg, store, newEventLog())
		id, err := r.Start(t.Context(), agent.StartRequest{Prompt: "lost"})
		if err == nil || core.ErrorCode(err) != core.CodeUnavailable || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("Start = %q, %v; want an UNAVAILABLE error naming the store failure", id, err)
		}
	})
}

// failingCreate is a store that refuses to create sessions.
type failingCreate struct{ *memStore }

func (failingCreate) CreateSession(context.Context, core.SessionHeader) error {
	return core.Errorf(core.CodeUnavailable, "store: read-only")
}

// TestRunnerDemoWorkspaceLifecycle: the demo's seeded workspace is created
// only once the session row exists, and a session still mid-script has it
// removed by Close.
func TestRunnerDemoWorkspaceLifecycle(t *testing.T) {
	builtins, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(quiet)
	reg.MustRegister(builtins...)
	entries := func(dir string) []string {
		t.Helper()
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}

	root := t.TempDir()
	r, err := agent.NewRunner(agent.RunnerConfig{Store: failingCreate{newMemStore()}, Tools: reg, Logger: quiet, WorkspaceRoot: root,
		Models: model.NewCatalog(model.CatalogConfig{DemoPacing: &model.Pacing{}})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Start(t.Context(), agent.StartRequest{Prompt: "hi"}); err == nil {
		t.Fatal("Start succeeded on a store that refuses sessions")
	}
	if got := entries(root); len(got) != 0 {
		t.Errorf("a start that failed to create its session left workspaces behind: %q", got)
	}

	// Slow pacing keeps the script running until Close cancels it.
	root = t.TempDir()
	r, err = agent.NewRunner(agent.RunnerConfig{Store: newMemStore(), Tools: reg, Logger: quiet, WorkspaceRoot: root,
		Models: model.NewCatalog(model.CatalogConfig{DemoPacing: &model.Pacing{FirstChunk: time.Hour}})})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.Start(t.Context(), agent.StartRequest{Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(root); !slices.Equal(got, []string{"prism-demo-" + id}) {
		t.Fatalf("workspaces while the demo runs = %q, want its own", got)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := entries(root); len(got) != 0 {
		t.Errorf("workspaces after Close = %q, want none", got)
	}
}

// TestRunnerCancelWithRecordsTheCause: a cancel with a cause (an attention
// rule's) ends the running turn with turn/end {aborted, {kind: hook,
// reason}} naming the rule.
func TestRunnerCancelWithRecordsTheCause(t *testing.T) {
	g := newGate()
	reg := core.NewRegistry(quiet)
	reg.MustRegister(gatedTool("wait", g, true))
	steps := []model.Step{{Calls: []model.ScriptCall{{Name: "wait", Arguments: `{"key":"long"}`}}}, {Text: "never"}}
	l := newEventLog()
	r := newRunner(t, scriptModels{steps}, reg, newMemStore(), l)
	id, err := r.Start(t.Context(), agent.StartRequest{Prompt: "spend"})
	if err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "long")
	cause := core.CancelCause{Kind: agent.CauseHook, Reason: "rule spend: 2570 tokens this session, over 2000"}
	if err := r.CancelWith(id, cause); err != nil {
		t.Fatal(err)
	}
	evs := l.waitTurns(t, id, 1)
	ends := find(evs, core.EventTurnEnd)
	if len(ends) != 1 {
		t.Fatalf("turn ends: %d", len(ends))
	}
	var end core.TurnEnd
	if err := json.Unmarshal(ends[0].Data, &end); err != nil {
		t.Fatal(err)
	}
	if end.Reason.Kind != core.TurnAborted || end.Reason.Reason == nil || *end.Reason.Reason != cause {
		t.Fatalf("turn/end = %+v, want aborted with %+v", end.Reason, cause)
	}
	if err := r.CancelWith("nope", cause); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("CancelWith of an unknown session: %v", err)
	}
}
