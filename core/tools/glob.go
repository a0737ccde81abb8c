package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"prism/core"
)

// GlobMaxResults is how many paths one glob shows inline (dsh's
// GLOB_MAX_RESULTS).
const GlobMaxResults = 100

// GlobArgs are the glob tool's arguments.
type GlobArgs struct {
	Pattern string  `json:"pattern"`
	Path    *string `json:"path,omitempty"`
}

// GlobValue is the glob tool's canonical value: the search root as shown and
// every matching file, oldest modification first.
type GlobValue struct {
	Root  string   `json:"root"`
	Paths []string `json:"paths"`
}

const globParams = `{
	"pattern": {"type": "string", "required": true, "description": "Glob pattern to match file paths against (e.g. \"**/*.ts\", \"src/**/*.test.js\"). A pattern with no \"/\" matches the basename at any depth, so \"*\" and \"*.ts\" both search the whole tree; include a separator to anchor the depth."},
	"path": {"type": "string", "description": "Directory to search in. Defaults to the session workspace; a relative path resolves against it."}
}`

const globSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"root": {"type": "string", "required": true},
	"paths": {"type": "array", "required": true, "items": {"type": "string"}}}}`

// globDescription is dsh's glob description for a deployment that keeps the
// modification-time head of an over-cap result (sampleOverCapGlobResults
// off, the standard preset).
var globDescription = "Find files whose paths match a glob pattern. Returns matching file paths — never directories — " +
	"including hidden and ignored files (VCS metadata directories are excluded). " +
	fmt.Sprintf("Up to %d paths come back in modification-time order; a larger result returns the first %d paths in modification-time order, ", GlobMaxResults, GlobMaxResults) +
	"says so, and reports where the complete sorted list was saved. This tool does not enumerate directory entries."

// globDefinition returns the glob tool: files matching a glob, oldest
// first, a search card from its meta.
func globDefinition(ws workspaceSource) core.Definition[GlobArgs, GlobValue] {
	return core.Definition[GlobArgs, GlobValue]{
		Name:        "glob",
		Description: globDescription,
		Parameters:  globParams,
		Timeout:     SearchTimeout,
		Output: core.Output[GlobArgs, GlobValue]{
			Schema: globSchema,
			Render: func(_ GlobArgs, v GlobValue) (core.Content, error) {
				return core.Text(formatGlob(v.Paths)), nil
			},
			PresentationMeta: func(_ GlobArgs, v GlobValue) (any, error) {
				page := v.Paths[:min(len(v.Paths), GlobMaxResults)]
				return capPathsMeta(SearchPathsMeta{
					Shape: "paths", Paths: page, Truncated: len(page) < len(v.Paths), Total: len(v.Paths),
				}, SearchMetaMaxBytes), nil
			},
		},
		Execute: func(ctx context.Context, a GlobArgs, run *core.Run) (GlobValue, error) {
			if strings.TrimSpace(a.Pattern) == "" {
				return GlobValue{}, errors.New("pattern must be a non-empty string")
			}
			if a.Path != nil && strings.TrimSpace(*a.Path) == "" {
				return GlobValue{}, errors.New("path must be a non-empty string when given")
			}
			w, err := ws(run)
			if err != nil {
				return GlobValue{}, err
			}
			return globSearch(ctx, w, a)
		},
		PresentCall: func(a GlobArgs) core.CallView {
			title := "Glob " + a.Pattern
			if a.Path != nil {
				title += " in " + *a.Path
			}
			return searchCall(title, a.Pattern)
		},
		PresentResult: func(_ GlobArgs, r core.ToolResult) core.ResultView {
			if r.IsError {
				return nil
			}
			if v, ok := searchViewFromMeta(r.Meta).(*core.SearchPathsView); ok {
				return v
			}
			return nil
		},
	}
}

// globSearch lists the regular files under the start path (hidden ones
// included, VCS metadata and symbolic links excluded) whose workspace-relative
// path matches, sorted by modification time, oldest first, then by path.
func globSearch(ctx context.Context, w *workspace, a GlobArgs) (GlobValue, error) {
	filter, err := newGlobFilter("glob", a.Pattern)
	if err != nil {
		return GlobValue{}, err
	}
	r, err := w.open()
	if err != nil {
		return GlobValue{}, err
	}
	defer r.Close()
	start, err := searchStart("glob", w, r, a.Path)
	if err != nil {
		return GlobValue{}, err
	}
	type found struct {
		path string
		mod  time.Time
	}
	var all []found
	err = walkFiles(ctx, "glob", r, start, walkOptions{hidden: true}, func(rel string, d fs.DirEntry) error {
		if !filter.match(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		all = append(all, found{path: rel, mod: info.ModTime()})
		return nil
	})
	if err != nil {
		return GlobValue{}, err
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].mod.Equal(all[j].mod) {
			return all[i].mod.Before(all[j].mod)
		}
		return all[i].path < all[j].path
	})
	v := GlobValue{Root: filepath.ToSlash(start.rel), Paths: make([]string, len(all))}
	for i, f := range all {
		v.Paths[i] = f.path
	}
	return v, nil
}

// formatGlob is dsh's glob text: the paths one per line, or the first
// GlobMaxResults with a footer when capped. prism has no spill store, so
// the footer is dsh's could-not-save variant.
func formatGlob(paths []string) string {
	if len(paths) == 0 {
		return "No files found"
	}
	if len(paths) <= GlobMaxResults {
		return strings.Join(paths, "\n")
	}
	return strings.Join(paths[:GlobMaxResults], "\n") +
		fmt.Sprintf("\n\n(Showing %d of %d paths. The complete result could not be saved; narrow pattern or path to see more.)",
			GlobMaxResults, len(paths))
}
