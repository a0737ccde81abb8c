package model_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"prism/core"
	"prism/core/model"
)

func TestScriptedPlaysStepsExactly(t *testing.T) {
	script := model.Script{Steps: []model.Step{
		{Reasoning: "thinking about ünïcödé ✓ things", Text: "Here we go — a fairly long sentence that will be cut into pieces.",
			Calls: []model.ScriptCall{
				{ID: "c1", Name: "read", Arguments: `{"file_path":"ü✓.txt","limit":3}`},
				{ID: "c2", Name: "read", Arguments: `{"file_path": "README.md"`},
			}},
		{Text: "done"},
	}}
	m := model.NewScripted(model.ScriptedConfig{Script: script, Pacing: model.Pacing{TextPiece: 5, ArgsPiece: 4}})
	chunks, a, err := run(t, m, model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		for _, s := range []*string{c.Text, c.ArgumentsDelta} {
			if s != nil && !utf8.ValidString(*s) {
				t.Errorf("delta %q cuts a character", *s)
			}
		}
	}
	got := blocks(t, a)
	want := `[{"type":"reasoning","text":"thinking about ünïcödé ✓ things"},` +
		`{"type":"text","text":"Here we go — a fairly long sentence that will be cut into pieces."},` +
		`{"type":"tool-call","id":"c1","name":"read","arguments":"{\"file_path\":\"ü✓.txt\",\"limit\":3}"},` +
		`{"type":"tool-call","id":"c2","name":"read","arguments":"{\"file_path\": \"README.md\""}]`
	if mustJSON(got) != want {
		t.Errorf("blocks = %s\nwant %s", mustJSON(got), want)
	}
	if a.Finish() != model.FinishToolCalls || a.Usage() == nil {
		t.Errorf("finish %q usage %v", a.Finish(), a.Usage())
	}
	// The same assembly without block-ends (deltas only) gives the same
	// blocks: the deltas alone carry the content exactly.
	var deltas model.Assembler
	for _, c := range chunks {
		if c.Type != core.ChunkBlockEnd {
			deltas.Push(c)
		}
	}
	if got2, _ := deltas.Blocks(); mustJSON(got2) != want {
		t.Errorf("delta-only blocks = %s", mustJSON(got2))
	}
	if _, a2, err := run(t, m, model.Request{}); err != nil || mustJSON(blocks(t, a2)) != `[{"type":"text","text":"done"}]` {
		t.Errorf("step 2: %v", err)
	}
	if m.Remaining() != 0 {
		t.Errorf("remaining = %d", m.Remaining())
	}
	// Exhausted: it echoes the last user message.
	_, a3, err := run(t, m, model.Request{Messages: []core.Message{core.NewUserMessage("u", "are you there?")}})
	if err != nil || !strings.Contains(mustJSON(blocks(t, a3)), "are you there?") {
		t.Errorf("exhausted answer = %s, %v", mustJSON(blocks(t, a3)), err)
	}
}

func TestScriptedGeneratesUniqueCallIDs(t *testing.T) {
	step := model.Step{Calls: []model.ScriptCall{{Name: "note", Arguments: `{}`}, {Name: "note", Arguments: `{}`}}}
	m := model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: []model.Step{step, step}}})
	seen := map[string]bool{}
	for range 2 {
		_, a, err := run(t, m, model.Request{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks(t, a) {
			id := b.(*core.ToolCallBlock).ID
			if id == "" || seen[id] {
				t.Errorf("call id %q empty or repeated", id)
			}
			seen[id] = true
		}
	}
}

func TestScriptedFailures(t *testing.T) {
	fail := &core.LLMFailure{Message: "overloaded", Code: "SERVER", Status: 503}
	m := model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: []model.Step{
		{Fail: fail},
		{Text: "partial", Calls: []model.ScriptCall{{ID: "c", Name: "bash", Arguments: `{}`}}, Fail: fail},
	}}})
	chunks, _, err := run(t, m, model.Request{})
	if len(chunks) != 0 || model.FailureOf(err) != *fail {
		t.Errorf("before stream: %d chunks, %v", len(chunks), err)
	}
	chunks, a, err := run(t, m, model.Request{})
	if model.FailureOf(err) != *fail {
		t.Errorf("mid-stream: %v", err)
	}
	for _, c := range chunks {
		if c.Type == core.ChunkFinish || c.Type == core.ChunkBlockEnd {
			t.Errorf("failed stream sent %s", c.Type)
		}
	}
	if mustJSON(a.InterruptedBlocks()) != `[{"type":"text","text":"partial"}]` {
		t.Errorf("interrupted = %s", mustJSON(a.InterruptedBlocks()))
	}
}

func TestScriptedHonoursCancellation(t *testing.T) {
	m := model.NewScripted(model.ScriptedConfig{
		Script: model.Script{Steps: []model.Step{{Text: strings.Repeat("word ", 100)}}},
		Pacing: model.Pacing{PerChunk: time.Hour, TextPiece: 5},
	})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := m.Stream(ctx, model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Recv(); err != nil { // the first chunk has no delay
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Recv(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if f := model.FailureOf(err); f.Code != model.CodeAborted {
			t.Errorf("err = %v, want ABORTED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv ignored the cancellation")
	}
}

func TestParseScript(t *testing.T) {
	s, err := model.ParseScript([]byte(`{"steps":[{"text":"hi","calls":[{"name":"note","arguments":"{\"title\":1"}]}]}`))
	if err != nil || s.Steps[0].Calls[0].Arguments != `{"title":1` {
		t.Fatalf("parse: %+v %v", s, err)
	}
	if _, err := model.ParseScript([]byte(`{"steps":[{"txt":"typo"}]}`)); err == nil {
		t.Error("unknown field accepted")
	}
	if _, err := model.ParseScript([]byte(`{"steps":[{"calls":[{"arguments":"{}"}]}]}`)); err == nil {
		t.Error("nameless call accepted")
	}
}

func TestDemoScriptCoversEveryCardAndFailure(t *testing.T) {
	names := map[string]int{}
	invalidJSON := false
	for _, st := range model.DemoScript().Steps {
		for _, c := range st.Calls {
			names[c.Name]++
			if _, ok := core.ParseArguments(c.Arguments).(string); ok {
				invalidJSON = true
			}
		}
	}
	for _, n := range []string{"note", "read", "write", "edit", "grep", "glob", "bash", "web_search", "subagent"} {
		if names[n] == 0 {
			t.Errorf("the demo never calls %s", n)
		}
	}
	if !invalidJSON {
		t.Error("the demo has no invalid-JSON call")
	}
	m := model.NewDemo(model.Pacing{})
	for i := range model.DemoScript().Steps {
		if _, _, err := run(t, m, model.Request{}); err != nil {
			t.Fatalf("demo step %d: %v", i+1, err)
		}
	}
}

func TestSeedDemoWorkspace(t *testing.T) {
	dir := t.TempDir()
	if err := model.SeedDemoWorkspace(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "greet", "greet.go"))
	if err != nil || !strings.Contains(string(data), `"Hello, %s!"`) {
		t.Fatalf("greet.go: %v %q", err, data)
	}
	// The edit the demo makes matches the seeded file exactly once.
	for _, st := range model.DemoScript().Steps {
		for _, c := range st.Calls {
			if c.Name != "edit" {
				continue
			}
			args := core.ParseArguments(c.Arguments).(map[string]any)
			src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(args["file_path"].(string))))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(src), args["old_string"].(string)); n != 1 {
				t.Errorf("edit of %s: old_string occurs %d times", args["file_path"], n)
			}
		}
	}
	if err := model.SeedDemoWorkspace(dir); err == nil {
		t.Error("seeding over existing files succeeded")
	}
}

func TestCatalog(t *testing.T) {
	c := model.NewCatalog(model.CatalogConfig{})
	if c.Default() != "scripted" {
		t.Errorf("default without key = %q", c.Default())
	}
	m, err := c.New("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(model.WorkspaceSeeder); !ok || m.Info().Provider != "scripted" {
		t.Errorf("default model = %T %+v", m, m.Info())
	}
	if _, err := c.New("deepseek-chat"); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("keyless deepseek-chat: %v", err)
	}
	// A name nobody knows is the caller's mistake, not a missing key.
	if _, err := c.New("gpt-bogus"); core.ErrorCode(err) != core.CodeInvalid ||
		!strings.Contains(err.Error(), `unknown model "gpt-bogus"`) || strings.Contains(err.Error(), "needs an API key") {
		t.Errorf("keyless unknown model: %v", err)
	}
	k := model.NewCatalog(model.CatalogConfig{OpenAI: model.OpenAIConfig{APIKey: "k"}})
	if k.Default() != "deepseek-chat" {
		t.Errorf("default with key = %q", k.Default())
	}
	m, err = k.New("deepseek-reasoner")
	if err != nil || m.Info() != (model.Info{Provider: "deepseek", Model: "deepseek-reasoner", ContextWindow: 128000}) {
		t.Errorf("named model = %+v, %v", m.Info(), err)
	}
}

func TestCollectStopsAtEOF(t *testing.T) {
	m := model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: []model.Step{{Text: "x"}}}})
	s, err := m.Stream(context.Background(), model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.Collect(s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); errors.Is(err, io.EOF) {
		t.Error("Recv after Close returned EOF, want an error")
	}
}
