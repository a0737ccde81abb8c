package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"prism/core"
)

// DiffContext is the number of context lines kept on each side of an
// applied hunk (dsh's DIFF_CONTEXT, matching claude-agent-acp).
const DiffContext = 3

// DiffMeta is the write and edit tools' presentation meta (dsh's
// FsDiffMeta): the applied hunks, persisted as tool/result.meta.diffs so the
// diff card survives replay.
type DiffMeta struct {
	Diffs []core.FileDiff `json:"diffs"`
}

// hunkDiffs computes one FileDiff per hunk between before and after, each
// with DiffContext lines of context (dsh's computeHunkDiffs over jsdiff's
// structuredPatch): context and removed lines form OldText, context and
// added lines NewText, and OldText is nil for a hunk without old lines (a
// pure insertion into an empty file). Identical texts give no hunks. path is
// stamped on every hunk as given (the model-facing file_path). Beyond dsh,
// each hunk carries the file lines its old and new text start at
// (oldStart, newStart), so cards number the lines as the file does.
func hunkDiffs(path, before, after string) ([]core.FileDiff, error) {
	diffs := []core.FileDiff{}
	if before == after {
		return diffs, nil
	}
	u, err := udiff.ToUnifiedDiff("", "", before, udiff.Lines(before, after), DiffContext)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", path, err)
	}
	for _, h := range u.Hunks {
		var oldLines, newLines []string
		for _, l := range h.Lines {
			text := strings.TrimSuffix(l.Content, "\n")
			switch l.Kind {
			case udiff.Delete:
				oldLines = append(oldLines, text)
			case udiff.Insert:
				newLines = append(newLines, text)
			default:
				oldLines = append(oldLines, text)
				newLines = append(newLines, text)
			}
		}
		d := core.FileDiff{Path: path, NewText: strings.Join(newLines, "\n")}
		if len(newLines) > 0 {
			d.NewStart = h.ToLine
		}
		if len(oldLines) > 0 {
			old := strings.Join(oldLines, "\n")
			d.OldText = &old
			d.OldStart = h.FromLine
		}
		diffs = append(diffs, d)
	}
	return diffs, nil
}

// diffsFromMeta narrows opaque result meta to non-empty file diffs (dsh's
// diffsFromMeta); absent or malformed meta gives nil so the presenter falls
// back instead of failing on replay.
func diffsFromMeta(meta json.RawMessage) []core.FileDiff {
	obj, ok := metaObject(meta)
	if !ok {
		return nil
	}
	list, ok := obj["diffs"].([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	out := make([]core.FileDiff, 0, len(list))
	for _, item := range list {
		d, ok := item.(map[string]any)
		if !ok {
			return nil
		}
		path, ok := d["path"].(string)
		if !ok {
			return nil
		}
		newText, ok := d["newText"].(string)
		if !ok {
			return nil
		}
		fd := core.FileDiff{Path: path, NewText: newText, OldStart: lineField(d, "oldStart"), NewStart: lineField(d, "newStart")}
		switch old := d["oldText"].(type) {
		case nil:
			if _, present := d["oldText"]; !present {
				return nil
			}
		case string:
			fd.OldText = &old
		default:
			return nil
		}
		out = append(out, fd)
	}
	return out
}

// lineField returns d[key] when it is a positive integer line number, else
// 0 (unknown): a malformed number loses the numbering, never the diff.
func lineField(d map[string]any, key string) int {
	f, ok := d[key].(float64)
	if !ok || f < 1 || f > 1<<31 || f != float64(int(f)) {
		return 0
	}
	return int(f)
}

// metaObject decodes meta as a JSON object (numbers as float64); anything
// else, absent meta included, reports false.
func metaObject(meta json.RawMessage) (map[string]any, bool) {
	if len(meta) == 0 {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(meta, &v); err != nil {
		return nil, false
	}
	obj, ok := v.(map[string]any)
	return obj, ok
}
