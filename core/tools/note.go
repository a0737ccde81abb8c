// Package tools holds prism's built-in tools, with DeepSeek Harness's names,
// argument shapes, model-facing texts, meta and presenters.
package tools

import (
	"context"
	"fmt"
	"strings"

	"prism/core"
)

// NoteArgs are the note tool's arguments.
type NoteArgs struct {
	Title string `json:"title"`
}

// Note is the note tool's canonical value.
type Note struct {
	Title string   `json:"title"`
	Lines []string `json:"lines"`
}

// NoteMeta is the note tool's presentation meta.
type NoteMeta struct {
	LineCount int    `json:"lineCount"`
	Title     string `json:"title"`
}

// NewNote returns the seed demo's note tool: a structured note whose
// canonical object value is rendered as markdown for the model, with its
// line count and title kept as UI meta.
func NewNote() *core.Tool { return core.MustDefine(NoteDefinition()) }

// NoteDefinition returns the note tool's typed definition, for callers (and
// tests) that adjust it before defining it.
func NoteDefinition() core.Definition[NoteArgs, Note] {
	return core.Definition[NoteArgs, Note]{
		Name:        "note",
		Description: "Return a structured note (canonical object value).",
		Parameters:  `{"title": {"type": "string", "required": true, "description": "Note title"}}`,
		Output: core.Output[NoteArgs, Note]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {
				"title": {"type": "string", "required": true},
				"lines": {"type": "array", "required": true, "items": {"type": "string"}}}}`,
			Render: func(_ NoteArgs, v Note) (core.Content, error) {
				var sb strings.Builder
				fmt.Fprintf(&sb, "# %s", v.Title)
				for _, l := range v.Lines {
					sb.WriteString("\n- ")
					sb.WriteString(l)
				}
				return core.Text(sb.String()), nil
			},
			PresentationMeta: func(_ NoteArgs, v Note) (any, error) {
				return NoteMeta{LineCount: len(v.Lines), Title: v.Title}, nil
			},
		},
		Execute: func(_ context.Context, a NoteArgs, _ *core.Run) (Note, error) {
			return Note{Title: a.Title, Lines: []string{"line one", "line two"}}, nil
		},
		IsConcurrencySafe: func(NoteArgs) bool { return true },
		// The body only builds a value from its arguments.
		Pure: true,
		PresentCall: func(a NoteArgs) core.CallView {
			return &core.GenericCallView{Title: "Read note " + a.Title, Kind: core.KindRead}
		},
		PresentResult: func(_ NoteArgs, r core.ToolResult) core.ResultView {
			return &core.GenericResultView{Title: "Note completed", Content: r.Content}
		},
	}
}
