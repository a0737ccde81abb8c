package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"prism/core"
)

// Presenters returns presentation-only tools named as Claude Code names its
// tools — Bash, Read, Write, Edit, MultiEdit, Grep, Glob, TodoWrite,
// WebFetch, WebSearch, Task, Agent — so that an imported call gets a card of
// prism's kinds (terminal, read, diff, search, web) drawn from its logged
// arguments and the result's meta (Claude Code's toolUseResult). Register
// them in the registry that presents cards (backend.Presenters' extra
// tools), never in one that runs calls: their Execute refuses. A call whose
// arguments or meta do not have the expected shape gets the generic card.
func Presenters() ([]*core.Tool, error) {
	var out []*core.Tool
	for _, p := range []struct {
		name   string
		call   func(args map[string]any) core.CallView
		result func(args map[string]any, r core.ToolResult) core.ResultView
	}{
		{"Bash", bashCall, bashResult},
		{"Read", readCall, readResult},
		{"Write", writeCall, editResult("Write")},
		{"Edit", editCall, editResult("Edit")},
		{"MultiEdit", multiEditCall, editResult("Edit")},
		{"Grep", grepCall, pathsResult},
		{"Glob", globCall, pathsResult},
		{"TodoWrite", todoCall, todoResult},
		{"WebFetch", webFetchCall, webFetchResult},
		{"WebSearch", webSearchCall, nil},
		{"Task", agentCall, nil},
		{"Agent", agentCall, nil},
	} {
		t, err := core.DefineRaw(core.RawDefinition{
			Name:        p.name,
			Description: "Claude Code's " + p.name + " tool, presented from an imported transcript; it does not run here.",
			Output: &core.RawOutput{Schema: json.RawMessage(`{"type":"object"}`),
				Render: func(_, v any) (core.Content, error) { return core.Text(fmt.Sprint(v)), nil }},
			Execute: func(context.Context, any, *core.Run) (any, error) {
				return nil, errors.New("this tool runs in Claude Code, not in prism")
			},
			PresentCall:   wrapCall(p.call),
			PresentResult: wrapResult(p.result),
		})
		if err != nil {
			return nil, fmt.Errorf("claude code presenter %s: %w", p.name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func wrapCall(f func(map[string]any) core.CallView) func(any) core.CallView {
	return func(a any) core.CallView {
		m, ok := a.(map[string]any)
		if !ok {
			return nil
		}
		return f(m)
	}
}

func wrapResult(f func(map[string]any, core.ToolResult) core.ResultView) func(any, core.ToolResult) core.ResultView {
	if f == nil {
		return nil
	}
	return func(a any, r core.ToolResult) core.ResultView {
		m, _ := a.(map[string]any)
		return f(m, r)
	}
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func num(m map[string]any, k string) (int, bool) {
	f, ok := m[k].(float64)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// meta decodes a result's meta as an object (nil if it is not one).
func meta(r core.ToolResult) map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Meta, &m) != nil {
		return nil
	}
	return m
}

func bashCall(a map[string]any) core.CallView {
	cmd := str(a, "command")
	if cmd == "" {
		return nil
	}
	if bg, _ := a["run_in_background"].(bool); bg {
		return &core.GenericCallView{Title: cmd, Kind: core.KindExecute, RawInput: cmd, Content: core.Text(str(a, "description"))}
	}
	return &core.TerminalCallView{Title: cmd, Description: str(a, "description")}
}

// bashResult is the terminal card from toolUseResult {stdout, stderr,
// interrupted}: stdout then stderr, exit code 0 for a success and
// "interrupted" as the signal of an interrupted command. A failure (its
// toolUseResult a string) keeps the generic card of its text.
func bashResult(_ map[string]any, r core.ToolResult) core.ResultView {
	m := meta(r)
	stdout, ok := m["stdout"].(string)
	if !ok {
		return nil
	}
	out := stdout
	if se := str(m, "stderr"); se != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += se
	}
	v := &core.TerminalResultView{Output: &out}
	if in, _ := m["interrupted"].(bool); in {
		v.Signal = "interrupted"
	} else if !r.IsError {
		zero := 0
		v.ExitCode = &zero
	}
	return v
}

func readCall(a map[string]any) core.CallView {
	p := str(a, "file_path")
	if p == "" {
		return nil
	}
	title := "Read " + p
	line := 1
	if off, ok := num(a, "offset"); ok && off >= 1 {
		line = off
		if lim, ok := num(a, "limit"); ok && lim > 0 {
			title += fmt.Sprintf(" (%d - %d)", off, off+lim-1)
		} else {
			title += fmt.Sprintf(" (from line %d)", off)
		}
	}
	return &core.GenericCallView{Title: title, Kind: core.KindRead, Locations: []core.FileLocation{{Path: p, Line: line}}}
}

// readResult is the read card from toolUseResult {type: "text", file:
// {filePath, content, startLine, totalLines}}.
func readResult(_ map[string]any, r core.ToolResult) core.ResultView {
	m := meta(r)
	f, _ := m["file"].(map[string]any)
	if r.IsError || f == nil || str(m, "type") != "text" {
		return nil
	}
	p := str(f, "filePath")
	content, ok := f["content"].(string)
	if p == "" || !ok {
		return nil
	}
	start, ok := num(f, "startLine")
	if !ok || start < 1 {
		start = 1
	}
	total, _ := num(f, "totalLines")
	v := &core.ReadResultView{Path: p, Offset: start, TotalLines: max(total, 0), Lines: []core.ReadFileLine{}}
	if content != "" {
		for i, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
			v.Lines = append(v.Lines, core.ReadFileLine{Number: start + i, Text: l})
		}
	}
	return v
}

func writeCall(a map[string]any) core.CallView {
	p := str(a, "file_path")
	if p == "" {
		return nil
	}
	return &core.DiffCallView{Title: "Write " + p, Diffs: []core.FileDiff{{Path: p, NewText: str(a, "content")}},
		Locations: []core.FileLocation{{Path: p}}}
}

func editCall(a map[string]any) core.CallView {
	p := str(a, "file_path")
	if p == "" {
		return nil
	}
	d := core.FileDiff{Path: p, NewText: str(a, "new_string")}
	if old := str(a, "old_string"); old != "" {
		d.OldText = &old
	}
	return &core.DiffCallView{Title: "Edit " + p, Diffs: []core.FileDiff{d}, Locations: []core.FileLocation{{Path: p}}}
}

func multiEditCall(a map[string]any) core.CallView {
	p := str(a, "file_path")
	edits, _ := a["edits"].([]any)
	if p == "" || len(edits) == 0 {
		return nil
	}
	v := &core.DiffCallView{Title: "Edit " + p, Locations: []core.FileLocation{{Path: p}}}
	for _, e := range edits {
		em, _ := e.(map[string]any)
		d := core.FileDiff{Path: p, NewText: str(em, "new_string")}
		if old := str(em, "old_string"); old != "" {
			d.OldText = &old
		}
		v.Diffs = append(v.Diffs, d)
	}
	return v
}

// editResult is the diff card from toolUseResult's structuredPatch
// [{oldStart, newStart, lines: [" ctx", "-old", "+new"]}] (Edit, MultiEdit,
// Write of an existing file); a Write that created its file (type
// "create") shows its content as new.
func editResult(verb string) func(map[string]any, core.ToolResult) core.ResultView {
	return func(_ map[string]any, r core.ToolResult) core.ResultView {
		m := meta(r)
		p := str(m, "filePath")
		if r.IsError || p == "" {
			return nil
		}
		hunks, _ := m["structuredPatch"].([]any)
		v := &core.DiffResultView{Title: verb + " " + p}
		for _, h := range hunks {
			hm, _ := h.(map[string]any)
			lines, _ := hm["lines"].([]any)
			var oldB, newB strings.Builder
			for _, l := range lines {
				s, _ := l.(string)
				if s == "" {
					continue
				}
				switch s[0] {
				case ' ':
					oldB.WriteString(s[1:] + "\n")
					newB.WriteString(s[1:] + "\n")
				case '-':
					oldB.WriteString(s[1:] + "\n")
				case '+':
					newB.WriteString(s[1:] + "\n")
				}
			}
			old := oldB.String()
			d := core.FileDiff{Path: p, OldText: &old, NewText: newB.String()}
			d.OldStart, _ = num(hm, "oldStart")
			d.NewStart, _ = num(hm, "newStart")
			v.Diffs = append(v.Diffs, d)
		}
		if len(v.Diffs) == 0 && str(m, "type") == "create" {
			v.Diffs = []core.FileDiff{{Path: p, NewText: str(m, "content")}}
		}
		if len(v.Diffs) == 0 {
			return nil
		}
		return v
	}
}

func grepCall(a map[string]any) core.CallView {
	pat := str(a, "pattern")
	if pat == "" {
		return nil
	}
	title := "Grep " + pat
	if p := str(a, "path"); p != "" {
		title += " in " + p
	}
	return &core.GenericCallView{Title: title, Kind: core.KindSearch}
}

func globCall(a map[string]any) core.CallView {
	pat := str(a, "pattern")
	if pat == "" {
		return nil
	}
	title := "Glob " + pat
	if p := str(a, "path"); p != "" {
		title += " in " + p
	}
	return &core.GenericCallView{Title: title, Kind: core.KindSearch}
}

// pathsResult is the search card of the paths a Glob (or a Grep listing
// files) found: toolUseResult {filenames, numFiles, truncated?}. A Grep of
// matching lines keeps the generic card of its text.
func pathsResult(_ map[string]any, r core.ToolResult) core.ResultView {
	m := meta(r)
	names, ok := m["filenames"].([]any)
	if r.IsError || !ok || (m["mode"] != nil && m["mode"] != "files_with_matches") {
		return nil
	}
	v := &core.SearchPathsView{Paths: []string{}}
	for _, n := range names {
		if s, ok := n.(string); ok {
			v.Paths = append(v.Paths, s)
		}
	}
	v.Total = len(v.Paths)
	if n, ok := num(m, "numFiles"); ok && n >= v.Total {
		v.Total = n
	}
	v.Truncated, _ = m["truncated"].(bool)
	return v
}

func todoCall(a map[string]any) core.CallView {
	todos, ok := a["todos"].([]any)
	if !ok {
		return nil
	}
	return &core.GenericCallView{Title: fmt.Sprintf("Update the to-do list (%d items)", len(todos)), Kind: core.KindOther,
		Content: core.Text(checklist(todos))}
}

// todoResult shows the list as a checklist ([x] done, [~] in progress).
func todoResult(a map[string]any, r core.ToolResult) core.ResultView {
	todos, ok := a["todos"].([]any)
	if r.IsError || !ok {
		return nil
	}
	return &core.GenericResultView{Content: core.Text(checklist(todos))}
}

func checklist(todos []any) string {
	var b strings.Builder
	for _, t := range todos {
		m, _ := t.(map[string]any)
		mark := "[ ]"
		switch str(m, "status") {
		case "completed":
			mark = "[x]"
		case "in_progress":
			mark = "[~]"
		}
		fmt.Fprintf(&b, "- %s %s\n", mark, str(m, "content"))
	}
	return b.String()
}

func webFetchCall(a map[string]any) core.CallView {
	u := str(a, "url")
	if u == "" {
		return nil
	}
	return &core.GenericCallView{Title: "Fetch " + u, Kind: core.KindFetch, Content: core.Text(str(a, "prompt"))}
}

// webFetchResult is the web card from toolUseResult {url, code}.
func webFetchResult(a map[string]any, r core.ToolResult) core.ResultView {
	m := meta(r)
	u := str(m, "url")
	if u == "" {
		u = str(a, "url")
	}
	code, ok := num(m, "code")
	if r.IsError || u == "" || !ok {
		return nil
	}
	return &core.WebFetchView{URL: u, StatusCode: code}
}

func webSearchCall(a map[string]any) core.CallView {
	q := str(a, "query")
	if q == "" {
		return nil
	}
	return &core.GenericCallView{Title: "Search the web: " + q, Kind: core.KindFetch}
}

// agentCall presents a subagent's spawn (Task, later Agent): its
// description as the title, its prompt as the content.
func agentCall(a map[string]any) core.CallView {
	title := str(a, "description")
	if title == "" {
		return nil
	}
	if t := str(a, "subagent_type"); t != "" {
		title += " (" + t + ")"
	}
	return &core.GenericCallView{Title: title, Kind: core.KindOther, Content: core.Text(str(a, "prompt"))}
}
