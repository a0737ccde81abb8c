package codex_test

import (
	"strings"
	"testing"

	"prism/core"
	"prism/sources/codex"
	"prism/views"
)

// presenters is a registry holding Codex's presentation tools, the way
// backend.Presenters holds them as extra tools.
func presenters(t *testing.T) *core.Registry {
	t.Helper()
	tools, err := codex.Tools()
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return reg
}

// cards presents every call of a decoded fixture with its result.
func cards(t *testing.T, reg *core.Registry, name string) (calls []core.CallView, results map[string]core.ResultView) {
	t.Helper()
	r := decodeFile(t, name)
	byID := map[string]core.ToolCall{}
	for _, c := range events[core.ToolCall](t, r, core.EventToolCall) {
		byID[c.CallID] = c
		calls = append(calls, reg.PresentCall(c.Name, c.Arguments))
	}
	results = map[string]core.ResultView{}
	for _, res := range events[core.ToolResultData](t, r, core.EventToolResult) {
		c := byID[res.CallID()]
		results[res.CallID()] = reg.PresentResult(c.Name, c.Arguments, res.Projection())
	}
	return calls, results
}

func TestShellCards(t *testing.T) {
	reg := presenters(t)
	calls, results := cards(t, reg, "plain")
	tc, ok := calls[0].(*core.TerminalCallView)
	if !ok || tc.Title != "go test ./...  -run TestParse" || tc.Cwd != "/home/ada/repo" {
		t.Fatalf("shell call view = %#v", calls[0])
	}
	tr, ok := results["call_A"].(*core.TerminalResultView)
	if !ok || tr.ExitCode == nil || *tr.ExitCode != 1 || tr.Output == nil || !strings.HasPrefix(*tr.Output, "--- FAIL: TestParse") {
		t.Fatalf("shell result view = %#v", results["call_A"])
	}

	calls, results = cards(t, reg, "parallel")
	if tc, ok := calls[1].(*core.TerminalCallView); !ok || tc.Title != "grep -c '^func Test' *_test.go" {
		t.Errorf("exec_command call view = %#v", calls[1])
	}
	if tr, ok := results["call_1"].(*core.TerminalResultView); !ok || *tr.ExitCode != 0 || *tr.Output != "14\n" {
		t.Errorf("exec_command result view = %#v", results["call_1"])
	}

	calls, results = cards(t, reg, "legacy")
	if tc, ok := calls[1].(*core.TerminalCallView); !ok || tc.Title != "cat a" || tc.Cwd != "/w" {
		t.Errorf("local_shell call view = %#v", calls[1])
	}
	if tr, ok := results["c1"].(*core.TerminalResultView); !ok || *tr.Output != "a\nb\n" || *tr.ExitCode != 0 {
		t.Errorf("legacy JSON output view = %#v", results["c1"])
	}

	// An aborted call's card is the generic failure, in a console fence.
	_, results = cards(t, reg, "aborted")
	if g, ok := results["call_S"].(*core.GenericResultView); !ok || !strings.HasPrefix(g.Content.PlainText(), "```console\nError: tool call aborted") {
		t.Errorf("aborted result view = %#v", results["call_S"])
	}
}

func TestPatchCards(t *testing.T) {
	reg := presenters(t)
	calls, results := cards(t, reg, "apply_patch")
	dc, ok := calls[0].(*core.DiffCallView)
	if !ok || dc.Title != "Patch hello.go, add NOTES.md" || len(dc.Diffs) != 2 {
		t.Fatalf("apply_patch call view = %#v", calls[0])
	}
	upd, add := dc.Diffs[0], dc.Diffs[1]
	if upd.Path != "hello.go" || upd.OldText == nil || *upd.OldText != "\tfmt.Println(\"hello, moon\")\n}" || upd.NewText != "\tfmt.Println(\"hello, world\")\n}" {
		t.Errorf("update hunk = %+v (old %q)", upd, *upd.OldText)
	}
	if add.Path != "NOTES.md" || add.OldText != nil || add.NewText != "# Notes\ngreets the world" {
		t.Errorf("added file = %+v", add)
	}
	if dr, ok := results["call_P"].(*core.DiffResultView); !ok || len(dr.Diffs) != 2 {
		t.Errorf("applied patch view = %#v", results["call_P"])
	}
	// A failed patch keeps the generic card with Codex's message.
	if g, ok := results["call_Q"].(*core.GenericResultView); !ok || !strings.Contains(g.Content.PlainText(), "verification failed") {
		t.Errorf("failed patch view = %#v", results["call_Q"])
	}
	// A tool Codex defines and prism does not know: the generic card, its
	// free-text input shown as is.
	if g, ok := calls[2].(*core.GenericCallView); !ok || g.Title != "exec" || g.RawInput != "const r = await tools.shell({command: [\"go\", \"vet\"]});\ntext(r.output);" {
		t.Errorf("code-mode call view = %#v", calls[2])
	}
	// A shell call running apply_patch (older builds) is a diff card too.
	v := reg.PresentCall(codex.ToolShell, `{"command":["apply_patch","*** Begin Patch\n*** Delete File: old.txt\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch"]}`)
	if dc, ok := v.(*core.DiffCallView); !ok || dc.Title != "Patch delete old.txt, a.txt → b.txt" || len(dc.Diffs) != 1 || dc.Diffs[0].Path != "b.txt" {
		t.Errorf("shell apply_patch view = %#v", v)
	}
}

func TestParsePatchErrors(t *testing.T) {
	for patch, want := range map[string]string{
		"":                                    "patch line 1: want \"*** Begin Patch\"",
		"*** Begin Patch\n*** End Patch":      "patch line 2: no file operation",
		"*** Begin Patch\nhello":              "patch line 2: want a file operation",
		"*** Begin Patch\n*** Add File: a\nx": "patch line 3: an added file's line must start with \"+\"",
		"*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch": "patch line 4: a hunk line must start",
		"*** Begin Patch\n*** Update File: a\n@@\n-x":                "patch line 5: want \"*** End Patch\"",
	} {
		_, err := codex.ParsePatch(patch)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParsePatch(%q) = %v, want %q…", patch, err, want)
		}
	}
}

func TestToolsNames(t *testing.T) {
	tools, err := codex.Tools()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	if got := strings.Join(names, " "); got != "shell container.exec shell_command exec_command local_shell apply_patch" {
		t.Errorf("tools = %s", got)
	}
}

// TestCardsSayErrorInferred renders the fold of a rollout: a call whose
// failure was read from its output says "error inferred"; an aborted one
// keeps its outcome, and a clean one is ok.
func TestCardsSayErrorInferred(t *testing.T) {
	reg := presenters(t)
	label := func(name, callID string) string {
		r := decodeFile(t, name)
		tl := views.Fold(r.Header, r.Events, reg)
		cs := tl.CardsByCallID(callID)
		if len(cs) != 1 {
			t.Fatalf("%s: %d cards for %s", name, len(cs), callID)
		}
		return views.NewCardView(cs[0], r.Header.ID, r.Header.Cwd).StateLabel
	}
	for _, c := range []struct{ file, call, want string }{
		{"apply_patch", "call_Q", "error inferred"},
		{"apply_patch", "call_P", "ok"},
		{"aborted", "call_S", "aborted"},
		{"aborted", "call_L", "outcome unknown"},
	} {
		if got := label(c.file, c.call); got != c.want {
			t.Errorf("%s %s: state label %q, want %q", c.file, c.call, got, c.want)
		}
	}
}
