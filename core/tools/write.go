package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"prism/core"
)

// diffBasisMaxBytes is the exclusive size limit of an overwrite's diff basis
// (dsh's diffBasisMaxBytes default): a larger before or after text gets no
// contextual hunks, and the diff card falls back to the whole new text.
const diffBasisMaxBytes = 10 * 1024 * 1024

// newFileMode is the mode of a file write creates.
const newFileMode fs.FileMode = 0o644

// WriteArgs are the write tool's arguments.
type WriteArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// WriteValue is the write tool's canonical value: the whole before and after
// text (LF-normalized), never persisted; only its hunks are, as meta.
type WriteValue struct {
	Path      string  `json:"path"`
	Operation string  `json:"operation"` // "create" or "update"
	Before    *string `json:"before"`    // nil for a create or an undiffable prior file
	After     string  `json:"after"`
}

const writeParams = `{
	"file_path": {"type": "string", "required": true, "description": "Path to write, resolved by the filesystem backend."},
	"content": {"type": "string", "required": true, "description": "Full UTF-8 text content to write."}
}`

const writeSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"path": {"type": "string", "required": true},
	"operation": {"type": "string", "required": true, "enum": ["create", "update"]},
	"before": {"required": true, "oneOf": [{"type": "string"}, {"type": "null"}]},
	"after": {"type": "string", "required": true}}}`

// writeDefinition returns the write tool: an atomic create-or-overwrite
// confirmed in dsh's envelope, a diff card from its hunks.
func writeDefinition(ws workspaceSource) core.Definition[WriteArgs, WriteValue] {
	return core.Definition[WriteArgs, WriteValue]{
		Name:        "write",
		Description: "Create or fully replace a UTF-8 text file.",
		Parameters:  writeParams,
		Output: core.Output[WriteArgs, WriteValue]{
			Schema: writeSchema,
			Render: func(_ WriteArgs, v WriteValue) (core.Content, error) {
				return core.Text(formatWriteOutput(v.Path, v.Operation)), nil
			},
			PresentationMeta: func(a WriteArgs, v WriteValue) (any, error) {
				if v.Before == nil {
					return DiffMeta{Diffs: []core.FileDiff{}}, nil
				}
				diffs, err := hunkDiffs(a.FilePath, *v.Before, v.After)
				if err != nil {
					return nil, err
				}
				return DiffMeta{Diffs: diffs}, nil
			},
		},
		Execute: func(ctx context.Context, a WriteArgs, run *core.Run) (WriteValue, error) {
			if strings.TrimSpace(a.FilePath) == "" {
				return WriteValue{}, errors.New("file_path must be a non-empty string")
			}
			w, err := ws(run)
			if err != nil {
				return WriteValue{}, err
			}
			t, err := w.resolve("write", a.FilePath)
			if err != nil {
				return WriteValue{}, err
			}
			return writeFile(ctx, w, t, a.Content)
		},
		PresentCall: func(a WriteArgs) core.CallView {
			return &core.DiffCallView{
				Title:     "Write " + a.FilePath,
				Diffs:     []core.FileDiff{{Path: a.FilePath, NewText: a.Content}},
				Locations: []core.FileLocation{{Path: a.FilePath}},
			}
		},
		PresentResult: func(a WriteArgs, r core.ToolResult) core.ResultView {
			if r.IsError {
				return nil
			}
			diffs := diffsFromMeta(r.Meta)
			if diffs == nil {
				// A create (or an identical overwrite) has no hunks: show the
				// whole new text, replay-safe from the arguments.
				diffs = []core.FileDiff{{Path: a.FilePath, NewText: a.Content}}
			}
			return &core.DiffResultView{Title: "Write " + a.FilePath, Diffs: diffs}
		},
	}
}

// formatWriteOutput is dsh's write confirmation envelope; no content is
// echoed back.
func formatWriteOutput(path, operation string) string {
	verb := "Updated"
	if operation == "create" {
		verb = "Created"
	}
	return "<path>" + path + "</path>\n<type>file</type>\n<content>\n" + verb + " file\n</content>"
}

// writeFile atomically creates or replaces t with content, keeping the mode
// of a file it replaces.
func writeFile(ctx context.Context, w *workspace, t target, content string) (WriteValue, error) {
	defer lockPath(t.abs)()
	r, err := w.open()
	if err != nil {
		return WriteValue{}, err
	}
	defer r.Close()
	mode := newFileMode
	existing, err := r.Stat(t.rel)
	switch {
	case err == nil && !existing.Mode().IsRegular():
		return WriteValue{}, fsError(CodeFsNotRegularFile, "cannot write %q: not a regular file", t.display)
	case err == nil:
		mode = existing.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		existing = nil
	default:
		return WriteValue{}, rootError("write", t, err)
	}
	var before *string
	if existing != nil && len(content) < diffBasisMaxBytes {
		before = readDiffBasis(r, t.rel)
	}
	if err := writeAtomic(ctx, r, t, []byte(content), mode); err != nil {
		return WriteValue{}, err
	}
	v := WriteValue{Path: t.display, Operation: "create", Before: before, After: normalizeLineEndings(content)}
	if existing != nil {
		v.Operation = "update"
	}
	return v, nil
}

// readDiffBasis reads an overwrite's prior text as the diff basis, or nil
// when it is too large, binary, not UTF-8 or unreadable (dsh's
// readTextForDiff): the basis is presentation-only and never fails a write.
func readDiffBasis(r *os.Root, rel string) *string {
	f, err := r.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, diffBasisMaxBytes))
	if err != nil || len(data) >= diffBasisMaxBytes || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil
	}
	s := normalizeLineEndings(string(data))
	return &s
}

// writeAtomic publishes data at t through a temporary file in the same
// directory and a rename, so a reader sees the old or the new text, never a
// mix. Missing parent directories are created. The caller's cancellation is
// checked before publication (FS_ABORTED "write aborted").
func writeAtomic(ctx context.Context, r *os.Root, t target, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(t.rel)
	if dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return rootError("write", t, err)
		}
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return fmt.Errorf("write %s: temporary name: %w", t.display, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(t.rel)+"."+hex.EncodeToString(suffix[:])+".tmp")
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return rootError("write", t, err)
	}
	defer func() {
		if err != nil {
			_ = r.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fsError(CodeFsIOError, "cannot write %q: %v", t.display, err)
	}
	if ctx.Err() != nil {
		return fsError(CodeFsAborted, "write aborted")
	}
	if err = r.Rename(tmp, t.rel); err != nil {
		return rootError("write", t, err)
	}
	return nil
}

// normalizeLineEndings collapses CRLF to LF, the diff and edit basis.
func normalizeLineEndings(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}
