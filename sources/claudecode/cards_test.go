package claudecode_test

import (
	"encoding/json"
	"testing"

	"prism/core"
	"prism/sources/claudecode"
)

// TestCards decodes a transcript calling each mapped tool and presents
// every call and result through a registry holding the presenters, as the
// server's card registry does: each gets the card kind and the fields its
// shape allows; an unknown tool keeps the generic card.
func TestCards(t *testing.T) {
	tools, err := claudecode.Presenters()
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	l := readFixture(t, "tools.jsonl")
	if err := core.ValidateLog(l.Header, l.Events); err != nil {
		t.Fatal(err)
	}
	calls := map[string]core.ToolCall{}
	type card struct {
		call   core.CallView
		result core.ResultView
	}
	cards := map[string]card{}
	for _, e := range l.Events {
		switch e.Type {
		case core.EventToolCall:
			var c core.ToolCall
			if err := e.DecodeData(&c); err != nil {
				t.Fatal(err)
			}
			calls[c.CallID] = c
		case core.EventToolResult:
			var r core.ToolResultData
			if err := e.DecodeData(&r); err != nil {
				t.Fatal(err)
			}
			c := calls[r.CallID()]
			cards[c.Name] = card{reg.PresentCall(c.Name, c.Arguments), reg.PresentResult(c.Name, c.Arguments, r.Projection())}
		}
	}
	kinds := map[string][2]string{
		"Edit": {core.CardDiff, core.CardDiff}, "Write": {core.CardDiff, core.CardDiff},
		"Bash": {core.CardTerminal, core.CardTerminal}, "Grep": {core.CardGeneric, core.CardSearch},
		"TodoWrite": {core.CardGeneric, core.CardGeneric}, "WebFetch": {core.CardGeneric, core.CardWeb},
		"Task": {core.CardGeneric, core.CardGeneric}, "mcp__git__status": {core.CardGeneric, core.CardGeneric},
		"Read": {core.CardGeneric, core.CardRead},
	}
	for name, want := range kinds {
		c, ok := cards[name]
		if !ok {
			t.Errorf("%s: no card", name)
			continue
		}
		if c.call.Card() != want[0] || c.result.Card() != want[1] {
			t.Errorf("%s: cards %s/%s, want %s/%s", name, c.call.Card(), c.result.Card(), want[0], want[1])
		}
	}
	diff := cards["Edit"].result.(*core.DiffResultView)
	if d := diff.Diffs[0]; *d.OldText != "func main() { println(\"hi\") }\n" || d.NewText != "func main() { fmt.Println(\"hi\") }\n" || d.OldStart != 2 {
		t.Errorf("edit diff = %+v", d)
	}
	if w := cards["Write"].result.(*core.DiffResultView).Diffs[0]; w.OldText != nil || w.NewText != "# Notes\n" {
		t.Errorf("write diff = %+v", w)
	}
	// Bash cards: the last one (go vet) has stdout then stderr, exit 0; the
	// interrupted one is covered by TestBashInterrupted.
	term := cards["Bash"].result.(*core.TerminalResultView)
	if *term.Output != "vet: ok\nwarning: cache" || term.ExitCode == nil || *term.ExitCode != 0 {
		t.Errorf("bash result = %+v", term)
	}
	if p := cards["Grep"].result.(*core.SearchPathsView); len(p.Paths) != 1 || p.Total != 1 {
		t.Errorf("grep paths = %+v", p)
	}
	if w := cards["WebFetch"].result.(*core.WebFetchView); w.URL != "https://go.dev/doc/" || w.StatusCode != 200 {
		t.Errorf("fetch = %+v", w)
	}
	r := cards["Read"].result.(*core.ReadResultView)
	if r.Offset != 2 || r.TotalLines != 3 || len(r.Lines) != 1 || r.Lines[0].Number != 2 {
		t.Errorf("read = %+v", r)
	}
	todo := cards["TodoWrite"].result.(*core.GenericResultView)
	if got := todo.Content[0].(*core.TextBlock).Text; got != "- [x] Edit main.go\n- [~] Write notes\n- [ ] Run tests\n" {
		t.Errorf("checklist = %q", got)
	}
	if c := cards["Task"].call.(*core.GenericCallView); c.Title != "Find callers (general-purpose)" {
		t.Errorf("task call = %+v", c)
	}
}

func TestBashInterrupted(t *testing.T) {
	tools, err := claudecode.Presenters()
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(map[string]any{"stdout": "", "stderr": "", "interrupted": true})
	v, ok := reg.PresentResult("Bash", `{"command":"sleep 100"}`, core.ToolResult{Content: core.Text("[Request interrupted by user for tool use]"), Meta: meta}).(*core.TerminalResultView)
	if !ok || v.Signal != "interrupted" || v.ExitCode != nil {
		t.Errorf("interrupted bash = %+v", v)
	}
	// An error result (toolUseResult a string) keeps the generic card.
	if g, ok := reg.PresentResult("Bash", `{"command":"false"}`, core.ToolResult{Content: core.Text("Exit code 1"), IsError: true, Meta: json.RawMessage(`"Error: Exit code 1"`)}).(*core.GenericResultView); !ok || g.Content == nil {
		t.Errorf("failed bash = %#v", g)
	}
}
