package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"prism/core"
)

// EditArgs are the edit tool's arguments.
type EditArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll *bool  `json:"replace_all,omitempty"`
}

// EditValue is the edit tool's canonical value: the LF-normalized text
// before and after the edit, never persisted; only its hunks are, as meta.
type EditValue struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

const editParams = `{
	"file_path": {"type": "string", "required": true, "description": "Path to edit, resolved by the filesystem backend."},
	"old_string": {"type": "string", "required": true, "description": "Literal text to replace. Must match exactly."},
	"new_string": {"type": "string", "required": true, "description": "Literal replacement text. Use an empty string to delete the match."},
	"replace_all": {"type": "boolean", "description": "Replace all matches. Defaults to false; when false, old_string must appear exactly once."}
}`

const editSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"path": {"type": "string", "required": true},
	"before": {"type": "string", "required": true},
	"after": {"type": "string", "required": true}}}`

func (a EditArgs) replaceAll() bool { return a.ReplaceAll != nil && *a.ReplaceAll }

// editDefinition returns the edit tool: a literal, unique-by-default
// replacement written atomically, a diff card from its applied hunks.
func editDefinition(ws workspaceSource) core.Definition[EditArgs, EditValue] {
	return core.Definition[EditArgs, EditValue]{
		Name:        "edit",
		Description: "Edit an existing UTF-8 text file by replacing literal text.",
		Parameters:  editParams,
		Output: core.Output[EditArgs, EditValue]{
			Schema: editSchema,
			Render: func(a EditArgs, v EditValue) (core.Content, error) {
				return core.Text(formatEditOutput(v.Path, a.replaceAll())), nil
			},
			PresentationMeta: func(a EditArgs, v EditValue) (any, error) {
				diffs, err := hunkDiffs(a.FilePath, v.Before, v.After)
				if err != nil {
					return nil, err
				}
				return DiffMeta{Diffs: diffs}, nil
			},
		},
		Execute: func(ctx context.Context, a EditArgs, run *core.Run) (EditValue, error) {
			switch {
			case strings.TrimSpace(a.FilePath) == "":
				return EditValue{}, errors.New("file_path must be a non-empty string")
			case a.OldString == "":
				return EditValue{}, errors.New("old_string must be a non-empty string")
			case a.OldString == a.NewString:
				return EditValue{}, errors.New("old_string and new_string must differ")
			}
			w, err := ws(run)
			if err != nil {
				return EditValue{}, err
			}
			t, err := w.resolve("edit", a.FilePath)
			if err != nil {
				return EditValue{}, err
			}
			return editFile(ctx, w, t, a)
		},
		PresentCall: func(a EditArgs) core.CallView {
			d := core.FileDiff{Path: a.FilePath, NewText: a.NewString}
			if a.OldString != "" {
				old := a.OldString
				d.OldText = &old
			}
			return &core.DiffCallView{
				Title:     "Edit " + a.FilePath,
				Diffs:     []core.FileDiff{d},
				Locations: []core.FileLocation{{Path: a.FilePath}},
			}
		},
		PresentResult: func(a EditArgs, r core.ToolResult) core.ResultView {
			if r.IsError {
				return nil
			}
			diffs := diffsFromMeta(r.Meta)
			if diffs == nil {
				return nil
			}
			return &core.DiffResultView{Title: "Edit " + a.FilePath, Diffs: diffs}
		},
	}
}

// formatEditOutput is dsh's Claude-style edit confirmation.
func formatEditOutput(path string, replaceAll bool) string {
	if replaceAll {
		return "The file " + path + " has been updated. All occurrences were successfully replaced."
	}
	return "The file " + path + " has been updated successfully."
}

// editFile applies one literal edit to t under its lock: the text is
// matched LF-normalized and written back in its original line-ending style
// with its mode kept.
func editFile(ctx context.Context, w *workspace, t target, a EditArgs) (EditValue, error) {
	defer lockPath(t.abs)()
	r, err := w.open()
	if err != nil {
		return EditValue{}, err
	}
	defer r.Close()
	fi, err := r.Stat(t.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return EditValue{}, fsError(CodeFsNotFound, "cannot edit %q: not found", t.display)
	}
	if err != nil {
		return EditValue{}, rootError("edit", t, err)
	}
	if !fi.Mode().IsRegular() {
		return EditValue{}, fsError(CodeFsNotRegularFile, "cannot edit %q: not a regular file", t.display)
	}
	f, err := r.Open(t.rel)
	if err != nil {
		return EditValue{}, rootError("edit", t, err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return EditValue{}, fsError(CodeFsIOError, "cannot edit %q: %v", t.display, err)
	}
	if ctx.Err() != nil {
		return EditValue{}, fsError(CodeFsAborted, "edit aborted")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return EditValue{}, fsError(CodeFsNotText, "cannot edit %q: binary file", t.display)
	}
	if !utf8.Valid(data) {
		return EditValue{}, fsError(CodeFsNotText, "cannot edit %q: invalid UTF-8 text", t.display)
	}
	raw := string(data)
	before := normalizeLineEndings(raw)
	after, err := applyLiteralEdit(before, a.OldString, a.NewString, a.replaceAll(), t.display)
	if err != nil {
		return EditValue{}, err
	}
	out := after
	if crlf(raw) {
		out = strings.ReplaceAll(normalizeLineEndings(after), "\n", "\r\n")
	}
	if err := writeAtomic(ctx, r, t, []byte(out), fi.Mode().Perm()); err != nil {
		return EditValue{}, err
	}
	return EditValue{Path: t.display, Before: before, After: after}, nil
}

// applyLiteralEdit replaces oldString (CRLF-normalized) in content: no match
// is FS_EDIT_NOT_FOUND, several without replaceAll FS_AMBIGUOUS_EDIT.
func applyLiteralEdit(content, oldString, newString string, replaceAll bool, display string) (string, error) {
	oldNorm := normalizeLineEndings(oldString)
	if oldNorm == "" {
		return "", fsError(CodeFsEditNotFound, "old_string must be a non-empty string")
	}
	n := strings.Count(content, oldNorm)
	if n == 0 {
		return "", fsError(CodeFsEditNotFound, "old_string was not found in %q", display)
	}
	if n > 1 && !replaceAll {
		return "", fsError(CodeFsAmbiguousEdit,
			"old_string matched %d times in %q; provide a more specific old_string or set replace_all to true", n, display)
	}
	return strings.ReplaceAll(content, oldNorm, normalizeLineEndings(newString)), nil
}

// crlf reports whether a text's head uses mostly CRLF line endings (dsh's
// detectLineEndings over the first 4096 bytes).
func crlf(raw string) bool {
	sample := raw[:min(len(raw), 4096)]
	crlfs := strings.Count(sample, "\r\n")
	lfs := strings.Count(sample, "\n") - crlfs
	return crlfs > lfs
}
