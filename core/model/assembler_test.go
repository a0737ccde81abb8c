package model_test

import (
	"testing"

	"prism/core"
	"prism/core/model"
)

func blockEnd(t *testing.T, i int, b core.ContentBlock) core.StreamChunk {
	t.Helper()
	c, err := model.BlockEnd(i, b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAssemblerOrderAndExactArguments(t *testing.T) {
	var a model.Assembler
	for _, c := range []core.StreamChunk{
		model.BlockStart(0, core.BlockText),
		model.TextDelta(0, "Hel"),
		model.BlockStart(1, core.BlockToolCall),
		model.ToolCallDelta(1, "c1", "read", `{"file_path":`),
		model.TextDelta(0, "lo"),
		model.ToolCallDelta(1, "c1", "", ` "a b" `),
		model.ToolCallDelta(1, "c1", "", `}`),
		model.FinishChunk(model.FinishToolCalls),
	} {
		a.Push(c)
	}
	got, err := a.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"Hello"},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"file_path\": \"a b\" }"}]`
	if mustJSON(got) != want {
		t.Errorf("blocks = %s\nwant %s", mustJSON(got), want)
	}
}

func TestAssemblerBlockEndIsAuthoritative(t *testing.T) {
	var a model.Assembler
	a.Push(model.TextDelta(0, "draft"))
	a.Push(blockEnd(t, 0, &core.TextBlock{Text: "final"}))
	a.Push(model.TextDelta(0, " straggler"))
	a.Push(blockEnd(t, 0, &core.TextBlock{Text: "second close"}))
	got, _ := a.Blocks()
	if mustJSON(got) != `[{"type":"text","text":"final"}]` {
		t.Errorf("blocks = %s", mustJSON(got))
	}
	if a.Finish() != model.FinishStop {
		t.Errorf("finish without chunk = %q, want stop", a.Finish())
	}
}

func TestAssemblerMaxTokensDropsToolCalls(t *testing.T) {
	var a model.Assembler
	a.Push(model.TextDelta(0, "I will call"))
	a.Push(model.ToolCallDelta(1, "c1", "bash", `{"command":"ls`))
	a.Push(model.FinishChunk(model.FinishMaxTokens))
	got, _ := a.Blocks()
	if mustJSON(got) != `[{"type":"text","text":"I will call"}]` {
		t.Errorf("blocks = %s", mustJSON(got))
	}
}

func TestAssemblerInterruptedKeepsTextAndReasoning(t *testing.T) {
	var a model.Assembler
	a.Push(model.ReasoningDelta(0, "hmm"))
	a.Push(model.TextDelta(1, "  "))
	a.Push(model.ToolCallDelta(2, "c1", "read", `{}`))
	a.Push(model.TextDelta(3, "partial answer"))
	got := a.InterruptedBlocks()
	if mustJSON(got) != `[{"type":"reasoning","text":"hmm"},{"type":"text","text":"partial answer"}]` {
		t.Errorf("interrupted = %s", mustJSON(got))
	}
}

func TestAssemblerMalformedChunk(t *testing.T) {
	var a model.Assembler
	a.Push(core.StreamChunk{Type: core.ChunkTextDelta})
	if a.Err() == nil {
		t.Error("a delta without index was accepted")
	}
}
