package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"prism/core"
)

// Codex's tool names that get cards of their own.
const (
	ToolShell        = "shell"          // {command: [argv], workdir?}
	ToolContainerExe = "container.exec" // shell's older name
	ToolShellCommand = "shell_command"  // {command: "script", workdir?}
	ToolExecCommand  = "exec_command"   // unified exec: {cmd: "script", workdir?}
	ToolApplyPatch   = "apply_patch"    // a custom tool: the patch as free text (or {input: patch})
)

// Tools returns presentation-only tools for Codex's shell and patch tools,
// so that the cards of a decoded rollout are prism's terminal and diff
// cards: pass them to the presenters' registry (backend.Presenters' extra
// tools). Their names are Codex's own; nothing executes through them, and
// Execute refuses. Arguments or outputs of another shape fall back to the
// generic card.
func Tools() ([]*core.Tool, error) {
	var out []*core.Tool
	add := func(name, what string, call func(any) core.CallView, result func(any, core.ToolResult) core.ResultView) error {
		t, err := core.DefineRaw(core.RawDefinition{
			Name:        name,
			Description: "Codex CLI's " + what + " (presentation of imported rollouts only).",
			Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"string"}`),
				Render: func(_, v any) (core.Content, error) { s, _ := v.(string); return core.Text(s), nil }},
			Execute: func(context.Context, any, *core.Run) (any, error) {
				return nil, errors.New("codex: " + name + " is presentation only")
			},
			PresentCall:   call,
			PresentResult: result,
		})
		if err != nil {
			return fmt.Errorf("codex tool %s: %w", name, err)
		}
		out = append(out, t)
		return nil
	}
	for _, n := range []string{ToolShell, ToolContainerExe, ToolShellCommand, ToolExecCommand, ToolLocalShell} {
		if err := add(n, "shell", presentShellCall, presentShellResult); err != nil {
			return nil, err
		}
	}
	if err := add(ToolApplyPatch, "patch tool", presentPatchCall, presentPatchResult); err != nil {
		return nil, err
	}
	return out, nil
}

// shellArgs reads a shell call's command and working directory from any of
// Codex's shapes; ok is false when there is no command.
func shellArgs(args any) (command []string, script, cwd string, ok bool) {
	m, _ := args.(map[string]any)
	if m == nil {
		return nil, "", "", false
	}
	for _, k := range []string{"workdir", "working_directory"} {
		if s, isStr := m[k].(string); isStr && s != "" {
			cwd = s
		}
	}
	switch c := m["command"].(type) {
	case string:
		return nil, c, cwd, c != ""
	case []any:
		for _, a := range c {
			s, isStr := a.(string)
			if !isStr {
				return nil, "", "", false
			}
			command = append(command, s)
		}
		return command, commandLine(command), cwd, len(command) > 0
	}
	if s, isStr := m["cmd"].(string); isStr && s != "" {
		return nil, s, cwd, true
	}
	return nil, "", "", false
}

// commandLine shows an argv: the script of `bash -lc script`, else the
// words joined, quoted where needed.
func commandLine(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		switch argv[0] {
		case "bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh":
			return argv[2]
		}
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}

// patchOfShell returns the patch of a shell call that runs apply_patch
// (["apply_patch", patch]), as older Codex builds did.
func patchOfShell(command []string) (string, bool) {
	if len(command) == 2 && (command[0] == "apply_patch" || command[0] == "applypatch") {
		return command[1], true
	}
	return "", false
}

func presentShellCall(args any) core.CallView {
	command, script, cwd, ok := shellArgs(args)
	if !ok {
		return nil
	}
	if p, isPatch := patchOfShell(command); isPatch {
		return presentPatchCall(p)
	}
	return &core.TerminalCallView{Title: script, Cwd: cwd}
}

func presentShellResult(args any, r core.ToolResult) core.ResultView {
	command, _, _, ok := shellArgs(args)
	if !ok {
		return nil
	}
	if p, isPatch := patchOfShell(command); isPatch {
		return presentPatchResult(p, r)
	}
	text := r.Content.PlainText()
	if r.IsError {
		return &core.GenericResultView{Content: core.Text("```console\n" + strings.TrimRight(text, "\n") + "\n```")}
	}
	body, code, ok := ParseExecOutput(text)
	if !ok {
		return nil // still running, or another shape: the raw output
	}
	return &core.TerminalResultView{Output: &body, ExitCode: &code}
}

// patchText returns an apply_patch call's patch: the free-text input, or
// the input field of its function-call form.
func patchText(args any) (string, bool) {
	switch a := args.(type) {
	case string:
		return a, true
	case map[string]any:
		s, ok := a["input"].(string)
		return s, ok
	}
	return "", false
}

func patchView(args any) (title string, diffs []core.FileDiff, ok bool) {
	p, ok := patchText(args)
	if !ok {
		return "", nil, false
	}
	files, err := ParsePatch(p)
	if err != nil {
		return "", nil, false
	}
	var names []string
	for _, f := range files {
		switch f.Op {
		case "delete":
			names = append(names, "delete "+f.Path)
		case "add":
			names = append(names, "add "+f.Path)
		default:
			if f.MoveTo != "" {
				names = append(names, f.Path+" → "+f.MoveTo)
			} else {
				names = append(names, f.Path)
			}
		}
		diffs = append(diffs, f.Hunks...)
	}
	return "Patch " + strings.Join(names, ", "), diffs, true
}

func presentPatchCall(args any) core.CallView {
	title, diffs, ok := patchView(args)
	if !ok {
		return nil
	}
	if diffs == nil {
		diffs = []core.FileDiff{}
	}
	return &core.DiffCallView{Title: title, Diffs: diffs}
}

// presentPatchResult shows the applied hunks; a failed patch (flagged, or a
// non-zero exit) keeps the generic card with Codex's message.
func presentPatchResult(args any, r core.ToolResult) core.ResultView {
	if r.IsError {
		return nil
	}
	if _, code, ok := ParseExecOutput(r.Content.PlainText()); ok && code != 0 {
		return nil
	}
	title, diffs, ok := patchView(args)
	if !ok || len(diffs) == 0 {
		return nil
	}
	return &core.DiffResultView{Title: title, Diffs: diffs}
}
