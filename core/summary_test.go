package core_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/coretest"
	"prism/sources/dsh"
)

func TestSummaryTitle(t *testing.T) {
	long := "Refactor the session list so that every row shows the same numbers as the inspector header does today"
	for _, tc := range []struct {
		name  string
		build func(b *coretest.Builder)
		want  string
	}{
		{"first line of the prompt", func(b *coretest.Builder) {
			b.User("Fix the failing test\nin the parser package")
		}, "Fix the failing test"},
		{"blank lines and spaces skipped", func(b *coretest.Builder) {
			b.User("\n  \n\t Fix   the\ttest \r\nthen more")
		}, "Fix the test"},
		{"cut on a word boundary", func(b *coretest.Builder) { b.User(long) },
			"Refactor the session list so that every row shows the same numbers as the…"},
		{"one long word is cut inside", func(b *coretest.Builder) { b.User(strings.Repeat("x", 100)) },
			strings.Repeat("x", 79) + "…"},
		{"exactly 80 characters stay", func(b *coretest.Builder) { b.User(strings.Repeat("y", 80)) },
			strings.Repeat("y", 80)},
		{"only the first user message", func(b *coretest.Builder) { b.User("first").User("second") }, "first"},
		{"session/title wins, even after the prompt", func(b *coretest.Builder) {
			b.User("the prompt")
			b.Add(core.EventSessionTitle, core.SessionTitle{Title: "  Named\nby the model "}, nil)
		}, "Named by the model"},
		{"the latest session/title wins; a blank one is ignored", func(b *coretest.Builder) {
			b.Add(core.EventSessionTitle, core.SessionTitle{Title: "one"}, nil)
			b.Add(core.EventSessionTitle, core.SessionTitle{Title: "two"}, nil)
			b.Add(core.EventSessionTitle, core.SessionTitle{Title: "  "}, nil)
			b.User("prompt")
		}, "two"},
		{"a plugin's user message is not the prompt", func(b *coretest.Builder) {
			b.Add(core.EventUserMessage, core.NewContextMessage("p1", "hooks", "context"), core.AppendOp())
			b.User("the prompt")
		}, "the prompt"},
		{"a replacement is not the prompt", func(b *coretest.Builder) {
			b.Add(core.EventUserMessage, core.NewUserMessage("s1", "summary"), &core.SurfaceOp{Replace: true})
			b.User("the prompt")
		}, "the prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := coretest.NewBuilder(1000)
			tc.build(b)
			if got := core.Summarize(b.Events).Title; got != tc.want {
				t.Errorf("title = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSummaryCounts(t *testing.T) {
	b := coretest.NewBuilder(1000)
	b.TurnStart().StepStart().User("run it")
	b.Assistant("", [3]string{"c1", "bash", `{"command":"false"}`}, [3]string{"c2", "read", `{"path":"x"}`})
	b.Call("c1", "bash", `{"command":"false"}`)
	b.Result("c1", "boom\n[exit code: 1]", false, nil, nil) // a failed command, not an error
	b.Call("c2", "read", `{"path":"x"}`)
	b.Result("c2", "Error: not found", true, nil, &core.ErrorInfo{Name: "FsError", Code: "FS_NOT_FOUND"})
	b.StepEnd().TurnEnd(core.TurnCompleted)
	got := core.Summarize(b.Events)
	want := core.Summary{Title: "run it", Status: core.StatusIdle, Events: int64(len(b.Events)), LastSeq: int64(len(b.Events) - 1),
		Turns: 1, Steps: 1, Calls: 2, Results: 2, Errors: 1, InputTokens: 1200, OutputTokens: 85,
		Models: []core.ModelUsage{{Model: "scripted-1", TokenUsage: core.TokenUsage{InputTokens: 1200, OutputTokens: 85}}}, Model: "scripted-1",
		FirstTime: 1000, LastTime: b.Events[len(b.Events)-1].Time}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
}

// TestSummaryModels: usage is kept per model (sorted by name, cache tokens
// too), the model line names each model once in the order they first
// answered, a message naming no model counts under "", a message without
// usage still names its model, and surface replacements count nothing.
func TestSummaryModels(t *testing.T) {
	b := coretest.NewBuilder(1000)
	assistant := func(model string, u *core.TokenUsage, op *core.SurfaceOp) {
		m := core.Message{ID: "m", Role: core.RoleAssistant, Content: core.Text("ok"), Source: core.Source{Kind: core.SourceModel, Model: model}}
		b.Add(core.EventAssistantMessage, core.AssistantMessage{Message: m, Usage: u}, op)
	}
	b.TurnStart()
	assistant("zeta", &core.TokenUsage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 40}, core.AppendOp())
	s := core.Summarize(b.Events)
	before := s // a copy: later events must not change it
	assistant("alpha", &core.TokenUsage{InputTokens: 7, OutputTokens: 3}, core.AppendOp())
	assistant("zeta", &core.TokenUsage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 1}, core.AppendOp())
	assistant("", &core.TokenUsage{InputTokens: 5, OutputTokens: 5}, core.AppendOp())
	assistant("beta", nil, core.AppendOp())
	assistant("omega", &core.TokenUsage{InputTokens: 1000, OutputTokens: 1000}, &core.SurfaceOp{Replace: true, Start: 1, End: 1})
	for i := range b.Events {
		s.Apply(&b.Events[i])
	}
	got := s
	if d := cmp.Diff(core.Summarize(b.Events), got); d != "" {
		t.Errorf("event-by-event fold differs from the whole-log fold (-whole +incremental):\n%s", d)
	}
	want := []core.ModelUsage{
		{Model: "", TokenUsage: core.TokenUsage{InputTokens: 5, OutputTokens: 5}},
		{Model: "alpha", TokenUsage: core.TokenUsage{InputTokens: 7, OutputTokens: 3}},
		{Model: "beta"},
		{Model: "zeta", TokenUsage: core.TokenUsage{InputTokens: 101, OutputTokens: 12, CacheReadTokens: 41}},
	}
	if d := cmp.Diff(want, got.Models); d != "" {
		t.Errorf("models (-want +got):\n%s", d)
	}
	if got.Model != "zeta, alpha, beta" {
		t.Errorf("model = %q, want %q", got.Model, "zeta, alpha, beta")
	}
	if got.InputTokens != 113 || got.OutputTokens != 20 {
		t.Errorf("tokens %d in %d out, want 113 and 20 (the models' sum)", got.InputTokens, got.OutputTokens)
	}
	if d := cmp.Diff([]core.ModelUsage{{Model: "zeta", TokenUsage: core.TokenUsage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 40}}}, before.Models); d != "" {
		t.Errorf("earlier summary changed (-want +got):\n%s", d)
	}
}

// TestSummaryCrashRepaired: repair answers a logged call with
// TOOL_OUTCOME_UNKNOWN and a call that was never logged with
// TOOL_NOT_STARTED; both are calls (one card each), both errors.
func TestSummaryCrashRepaired(t *testing.T) {
	b := coretest.NewBuilder(1000)
	b.TurnStart().StepStart().User("go")
	b.Assistant("", [3]string{"c1", "bash", `{"command":"make"}`}, [3]string{"c2", "read", `{"path":"a"}`})
	b.Call("c1", "bash", `{"command":"make"}`)
	b.Repair()
	got := core.Summarize(b.Events)
	if got.Calls != 2 || got.Results != 2 || got.Errors != 2 || got.Status != core.StatusInterrupted {
		t.Errorf("calls %d results %d errors %d status %q; want 2 2 2 interrupted", got.Calls, got.Results, got.Errors, got.Status)
	}
}

func TestSummaryStatus(t *testing.T) {
	b := coretest.NewBuilder(1000)
	if s := core.Summarize(nil); s.Status != core.StatusIdle || s.LastSeq != -1 || s.Events != 0 {
		t.Errorf("empty log: %+v", s)
	}
	b.TurnStart()
	if s := core.Summarize(b.Events); s.Status != core.StatusRunning {
		t.Errorf("open turn: status %q", s.Status)
	}
	b.TurnEnd(core.TurnCompleted)
	if s := core.Summarize(b.Events); s.Status != core.StatusIdle {
		t.Errorf("closed turn: status %q", s.Status)
	}
	one := coretest.NewBuilder(1000)
	one.Add(core.EventSubagentDescr, map[string]any{"mode": "one-shot"}, nil)
	one.TurnStart().TurnEnd(core.TurnCompleted)
	if s := core.Summarize(one.Events); s.Status != core.StatusEnded {
		t.Errorf("one-shot subagent: status %q, want ended", s.Status)
	}
}

// TestSummaryTimes: event times may go backwards; the span is the smallest
// to the largest, and an event at or below the last seq is ignored.
func TestSummaryTimes(t *testing.T) {
	b := coretest.NewBuilder(5000)
	b.TurnStart()
	b.Time = 1000
	b.StepStart()
	b.Time = 9000
	b.StepEnd()
	s := core.Summarize(b.Events)
	s.Apply(&b.Events[1])
	if s.FirstTime != 1000 || s.LastTime != 9000 || s.Events != 3 {
		t.Errorf("first %d last %d events %d; want 1000 9000 3", s.FirstTime, s.LastTime, s.Events)
	}
}

func TestSummaryMalformedData(t *testing.T) {
	s := core.NewSummary()
	s.Apply(&core.Event{Type: core.EventToolResult, Seq: 0, Time: 1, Data: []byte(`{"message":"not an object"}`), SurfaceOp: core.AppendOp()})
	s.Apply(&core.Event{Type: core.EventTurnEnd, Seq: 1, Time: 2, Data: []byte(`[]`)})
	if s.Events != 2 || s.Results != 1 || s.Errors != 0 || s.Status != core.StatusIdle {
		t.Errorf("malformed events: %+v", s)
	}
}

// TestTypedFactsEqualFactsOf: the facts the fold takes from data it has
// decoded equal the ones the store decodes — on every event of the dsh
// fixtures and of a log with every kind of event the builder writes — so
// the list and the page cannot disagree.
func TestTypedFactsEqualFactsOf(t *testing.T) {
	var logs [][]core.Event
	for _, f := range []string{"basic/session.jsonl", "crashed/session.jsonl", "export/session-export.zip"} {
		ls, _, err := dsh.ReadFile(filepath.Join("..", "testdata", "dsh", f), dsh.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			logs = append(logs, l.Events)
		}
	}
	b := coretest.NewBuilder(1000)
	b.TurnStart().StepStart().User("hello\nthere").Chunks("a", "b")
	b.Assistant("x", [3]string{"c1", "bash", `{}`}, [3]string{"c2", "read", `{}`})
	b.Call("c1", "bash", `{}`).Result("c1", "boom", true, nil, &core.ErrorInfo{Name: "E", Code: "X"})
	b.Add(core.EventSessionTitle, core.SessionTitle{Title: "t"}, nil)
	b.StepEnd()
	b.Repair()
	logs = append(logs, b.Events)
	typed := map[string]func() any{
		core.EventTurnEnd: func() any { return new(core.TurnEnd) }, core.EventSessionTitle: func() any { return new(core.SessionTitle) },
		core.EventUserMessage: func() any { return new(core.Message) }, core.EventToolCall: func() any { return new(core.ToolCall) },
		core.EventToolResult: func() any { return new(core.ToolResultData) }, core.EventAssistantMessage: func() any { return new(core.AssistantMessage) },
	}
	n := 0
	for _, events := range logs {
		for i := range events {
			e := &events[i]
			mk, ok := typed[e.Type]
			if !ok {
				continue
			}
			d := mk()
			if err := json.Unmarshal(e.Data, d); err != nil {
				t.Fatalf("seq %d (%s): %v", e.Seq, e.Type, err)
			}
			n++
			if got, want := core.TypedFacts(e, d), core.FactsOf(e); !reflect.DeepEqual(got, want) {
				t.Errorf("seq %d (%s): typed facts %+v, decoded %+v", e.Seq, e.Type, got, want)
			}
		}
	}
	if n < 20 {
		t.Fatalf("compared %d events", n)
	}
}
