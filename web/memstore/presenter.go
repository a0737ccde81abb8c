package memstore

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"prism/core"
)

// Presenter presents dsh's built-in tools (bash, read, write, edit, grep,
// glob, web_search, web_fetch) from their logged arguments and meta, the
// way dsh's presenters do (dsh-spec §5.8), and everything else as the
// generic card. It stands in until core's built-in tools land; like any
// presenter it is pure and never fails.
type Presenter struct{}

// PresentCall implements views.Presenter.
func (Presenter) PresentCall(name, raw string) core.CallView {
	var a map[string]any
	_ = json.Unmarshal([]byte(raw), &a)
	str := func(k string) string { s, _ := a[k].(string); return s }
	switch name {
	case "bash":
		if cmd := str("command"); cmd != "" {
			return &core.TerminalCallView{Title: cmd, Description: str("description"), Cwd: str("workdir")}
		}
	case "read":
		if p := str("path"); p != "" {
			return &core.GenericCallView{Title: "Read " + p, Kind: core.KindRead, Locations: []core.FileLocation{{Path: p}}}
		}
	case "write":
		if p := str("path"); p != "" {
			return &core.DiffCallView{Title: "Write " + p, Diffs: []core.FileDiff{{Path: p, NewText: str("content")}}, Locations: []core.FileLocation{{Path: p}}}
		}
	case "edit":
		if p := str("path"); p != "" {
			old := str("old_string")
			var op *string
			if old != "" {
				op = &old
			}
			return &core.DiffCallView{Title: "Edit " + p, Diffs: []core.FileDiff{{Path: p, OldText: op, NewText: str("new_string")}}, Locations: []core.FileLocation{{Path: p}}}
		}
	case "grep":
		if p := str("pattern"); p != "" {
			return &core.GenericCallView{Title: "Grep " + p, Kind: core.KindSearch, RawInput: p}
		}
	case "glob":
		if p := str("pattern"); p != "" {
			return &core.GenericCallView{Title: "Glob " + p, Kind: core.KindSearch, RawInput: p}
		}
	case "web_fetch":
		if u := str("url"); u != "" {
			return &core.GenericCallView{Title: "Fetch " + u, Kind: core.KindFetch}
		}
	case "web_search":
		return &core.GenericCallView{Title: "Search the web", Kind: core.KindSearch, RawInput: a["queries"]}
	}
	return &core.GenericCallView{Title: name, RawInput: core.ParseArguments(raw)}
}

var exitRE = regexp.MustCompile(`\n?\[(exit code: (-?\d+)|killed by signal: ([A-Z0-9]+))\]\s*$`)

// PresentResult implements views.Presenter.
func (Presenter) PresentResult(name, raw string, r core.ToolResult) core.ResultView {
	if r.IsError {
		return nil
	}
	text := r.Content.PlainText()
	switch name {
	case "bash":
		v := &core.TerminalResultView{}
		body := text
		tailAt := max(0, len(text)-200) // the marker is at the end; never scan a huge output
		if m := exitRE.FindStringSubmatchIndex(text[tailAt:]); m != nil {
			tail := text[tailAt:]
			body = text[:tailAt+m[0]]
			if m[4] >= 0 {
				n, _ := strconv.Atoi(tail[m[4]:m[5]])
				v.ExitCode = &n
			} else {
				v.Signal = tail[m[6]:m[7]]
			}
		}
		body = strings.TrimSuffix(body, "\n")
		v.Output = &body
		return v
	case "read":
		var m core.ReadResultView
		if json.Unmarshal(r.Meta, &m) == nil && m.Path != "" {
			m.Content = r.Content
			return &m
		}
	case "write", "edit":
		var m struct {
			Diffs []core.FileDiff `json:"diffs"`
		}
		if json.Unmarshal(r.Meta, &m) == nil && len(m.Diffs) > 0 {
			return &core.DiffResultView{Diffs: m.Diffs}
		}
	case "grep", "glob":
		var m struct {
			Shape     string                   `json:"shape"`
			Files     []core.SearchFileMatches `json:"files"`
			Paths     []string                 `json:"paths"`
			Truncated bool                     `json:"truncated"`
			Total     int                      `json:"total"`
		}
		if json.Unmarshal(r.Meta, &m) == nil {
			switch m.Shape {
			case "matches":
				return &core.SearchMatchesView{Files: m.Files, Truncated: m.Truncated, Total: m.Total}
			case "paths":
				return &core.SearchPathsView{Paths: m.Paths, Truncated: m.Truncated, Total: m.Total}
			}
		}
	case "web_search":
		var m core.WebSearchView
		if json.Unmarshal(r.Meta, &m) == nil && m.Sources != nil {
			return &m
		}
	case "web_fetch":
		var m core.WebFetchView
		if json.Unmarshal(r.Meta, &m) == nil && m.URL != "" {
			return &m
		}
	}
	return nil
}
