package codex

import (
	"errors"
	"fmt"
	"strings"

	"prism/core"
)

// PatchFile is one file operation of an apply_patch patch.
type PatchFile struct {
	// Op is "add", "delete" or "update".
	Op string
	// Path is the file the operation names; MoveTo the new path of an
	// update that renames it.
	Path, MoveTo string
	// Hunks are the changed regions: an added file's whole text is one
	// hunk with no old text.
	Hunks []core.FileDiff
}

// ParsePatch reads Codex's apply_patch format:
//
//	*** Begin Patch
//	*** Add File: <path>       then its lines, each prefixed "+"
//	*** Delete File: <path>
//	*** Update File: <path>    then optionally "*** Move to: <path>", then
//	                           hunks: "@@ [context]" and lines prefixed " ", "-" or "+"
//	*** End of File            (optional, inside an update)
//	*** End Patch
//
// A bad line is an error naming its line (1-based) in the patch.
func ParsePatch(patch string) ([]PatchFile, error) {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(patch, "\r\n", "\n"), "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "*** Begin Patch" {
		return nil, errors.New("patch line 1: want \"*** Begin Patch\"")
	}
	var (
		files    []PatchFile
		cur      *PatchFile
		old, new []string
		inHunk   bool
	)
	flush := func() {
		if cur != nil && inHunk && (len(old) > 0 || len(new) > 0) {
			o := strings.Join(old, "\n")
			d := core.FileDiff{Path: cur.target(), OldText: &o, NewText: strings.Join(new, "\n")}
			cur.Hunks = append(cur.Hunks, d)
		}
		old, new, inHunk = nil, nil, false
	}
	endFile := func() {
		if cur == nil {
			return
		}
		if cur.Op == "add" {
			cur.Hunks = []core.FileDiff{{Path: cur.Path, NewText: strings.Join(new, "\n")}}
			new = nil
		} else {
			flush()
		}
		files = append(files, *cur)
		cur = nil
	}
	for i, line := range lines[1:] {
		n := i + 2
		switch {
		case line == "*** End Patch":
			endFile()
			if len(files) == 0 {
				return nil, fmt.Errorf("patch line %d: no file operation", n)
			}
			return files, nil
		case strings.HasPrefix(line, "*** Add File: "):
			endFile()
			cur = &PatchFile{Op: "add", Path: strings.TrimPrefix(line, "*** Add File: ")}
		case strings.HasPrefix(line, "*** Delete File: "):
			endFile()
			cur = &PatchFile{Op: "delete", Path: strings.TrimPrefix(line, "*** Delete File: ")}
		case strings.HasPrefix(line, "*** Update File: "):
			endFile()
			cur = &PatchFile{Op: "update", Path: strings.TrimPrefix(line, "*** Update File: ")}
		case cur == nil:
			return nil, fmt.Errorf("patch line %d: want a file operation, got %q", n, line)
		case strings.HasPrefix(line, "*** Move to: ") && cur.Op == "update" && len(cur.Hunks) == 0 && !inHunk:
			cur.MoveTo = strings.TrimPrefix(line, "*** Move to: ")
		case line == "*** End of File":
		case cur.Op == "add":
			if !strings.HasPrefix(line, "+") {
				return nil, fmt.Errorf("patch line %d: an added file's line must start with \"+\"", n)
			}
			new = append(new, line[1:])
		case cur.Op == "delete":
			return nil, fmt.Errorf("patch line %d: a deleted file has no lines", n)
		case strings.HasPrefix(line, "@@"):
			flush()
			inHunk = true
		default:
			inHunk = true // the first hunk's "@@" may be omitted
			switch {
			case line == "":
				old, new = append(old, ""), append(new, "")
			case line[0] == ' ':
				old, new = append(old, line[1:]), append(new, line[1:])
			case line[0] == '-':
				old = append(old, line[1:])
			case line[0] == '+':
				new = append(new, line[1:])
			default:
				return nil, fmt.Errorf("patch line %d: a hunk line must start with \" \", \"-\" or \"+\"", n)
			}
		}
	}
	return nil, fmt.Errorf("patch line %d: want \"*** End Patch\"", len(lines)+1)
}

// target is where an update's hunks land.
func (f *PatchFile) target() string {
	if f.MoveTo != "" {
		return f.MoveTo
	}
	return f.Path
}
