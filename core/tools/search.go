package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"prism/core"
)

// Search bounds shared by grep and glob (dsh's search-core defaults).
const (
	// SearchMetaMaxBytes caps one search's serialized presentation meta,
	// which the spill policy never shrinks.
	SearchMetaMaxBytes = 65536
	// SearchTimeout is the cooperative deadline of one grep or glob call.
	SearchTimeout = 30 * time.Second
	// searchRawMaxBytes caps the matched text one grep collects before it
	// fails with SEARCH_RAW_OUTPUT_OVERFLOW (dsh's RAW_OUTPUT_MAX_BYTES).
	searchRawMaxBytes = 20_000_000
)

// dsh's SearchError codes (packages/fs/tool-fs-search/src/search-core.ts).
const (
	CodeSearchInvalidPattern    = "SEARCH_INVALID_PATTERN"
	CodeSearchFailed            = "SEARCH_FAILED"
	CodeSearchRawOutputOverflow = "SEARCH_RAW_OUTPUT_OVERFLOW"
	CodeSearchAborted           = "SEARCH_ABORTED"
)

func searchError(code, format string, args ...any) *core.Error {
	return core.NewError("SearchError", code, format, args...)
}

func searchAborted(tool string) *core.Error {
	return searchError(CodeSearchAborted, "%s was aborted before completion (tool timeout or caller cancellation)", tool)
}

// vcsDirs are never searched or listed (dsh's GLOB_VCS_EXCLUDES).
var vcsDirs = map[string]bool{".git": true, ".svn": true, ".hg": true, ".bzr": true, ".jj": true, ".sl": true}

// SearchMatchesMeta is grep's presentation meta: the retained matches
// grouped by file, whether anything was left out, and the pre-cap total.
type SearchMatchesMeta struct {
	Shape     string                   `json:"shape"` // "matches"
	Files     []core.SearchFileMatches `json:"files"`
	Truncated bool                     `json:"truncated"`
	Total     int                      `json:"total"`
}

// SearchPathsMeta is glob's presentation meta: the retained paths, whether
// anything was left out, and the pre-cap total.
type SearchPathsMeta struct {
	Shape     string   `json:"shape"` // "paths"
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated"`
	Total     int      `json:"total"`
}

// metaSize is the serialized size of a meta payload, as persisted.
func metaSize(v any) int {
	data, err := core.MarshalNoEscape(v)
	if err != nil {
		return math.MaxInt
	}
	return len(data)
}

// largestFitting returns the largest k in [1, n] for which fits(k) holds,
// or 1 when none does; fits must be monotone (true up to some k).
func largestFitting(n int, fits func(k int) bool) int {
	return max(1, sort.Search(n, func(i int) bool { return !fits(i + 1) }))
}

// capMatchesMeta bounds grep's meta to maxBytes (dsh's capMetaBytes):
// trailing file groups are dropped and the result marked truncated. Unlike
// dsh, which keeps one oversized group whole, the last group's trailing
// matches are dropped too, so the persisted meta always fits.
func capMatchesMeta(m SearchMatchesMeta, maxBytes int) SearchMatchesMeta {
	if metaSize(m) <= maxBytes {
		return m
	}
	files := m.Files
	m.Truncated = true
	k := largestFitting(len(files), func(k int) bool {
		m.Files = files[:k]
		return metaSize(m) <= maxBytes
	})
	m.Files = files[:k]
	if k == 1 && metaSize(m) > maxBytes {
		first := files[0]
		j := largestFitting(len(first.Matches), func(j int) bool {
			m.Files = []core.SearchFileMatches{{Path: first.Path, Matches: first.Matches[:j]}}
			return metaSize(m) <= maxBytes
		})
		m.Files = []core.SearchFileMatches{{Path: first.Path, Matches: first.Matches[:j]}}
	}
	return m
}

// capPathsMeta bounds glob's meta to maxBytes by dropping trailing paths.
func capPathsMeta(m SearchPathsMeta, maxBytes int) SearchPathsMeta {
	if metaSize(m) <= maxBytes {
		return m
	}
	paths := m.Paths
	m.Truncated = true
	k := largestFitting(len(paths), func(k int) bool {
		m.Paths = paths[:k]
		return metaSize(m) <= maxBytes
	})
	m.Paths = paths[:k]
	return m
}

// searchViewFromMeta narrows opaque meta to a search card (dsh's
// searchViewFromMeta); absent or malformed meta gives nil. A zero-result
// meta is a valid empty card.
func searchViewFromMeta(meta json.RawMessage) core.ResultView {
	obj, ok := metaObject(meta)
	if !ok {
		return nil
	}
	truncated, ok := obj["truncated"].(bool)
	if !ok {
		return nil
	}
	total, ok := metaInt(obj["total"], 0)
	if !ok {
		return nil
	}
	switch obj["shape"] {
	case "matches":
		list, ok := obj["files"].([]any)
		if !ok {
			return nil
		}
		files := make([]core.SearchFileMatches, 0, len(list))
		for _, item := range list {
			f, ok := item.(map[string]any)
			if !ok {
				return nil
			}
			p, ok := f["path"].(string)
			if !ok {
				return nil
			}
			ms, ok := f["matches"].([]any)
			if !ok {
				return nil
			}
			group := core.SearchFileMatches{Path: p, Matches: make([]core.SearchLineMatch, 0, len(ms))}
			for _, mi := range ms {
				m, ok := mi.(map[string]any)
				if !ok {
					return nil
				}
				n, ok := metaInt(m["lineNumber"], math.MinInt32)
				if !ok {
					return nil
				}
				line, ok := m["line"].(string)
				if !ok {
					return nil
				}
				group.Matches = append(group.Matches, core.SearchLineMatch{LineNumber: n, Line: line})
			}
			files = append(files, group)
		}
		return &core.SearchMatchesView{Files: files, Truncated: truncated, Total: total}
	case "paths":
		list, ok := obj["paths"].([]any)
		if !ok {
			return nil
		}
		paths := make([]string, 0, len(list))
		for _, item := range list {
			p, ok := item.(string)
			if !ok {
				return nil
			}
			paths = append(paths, p)
		}
		return &core.SearchPathsView{Paths: paths, Truncated: truncated, Total: total}
	}
	return nil
}

// searchCall is the pending card of both search tools.
func searchCall(title, pattern string) core.CallView {
	return &core.GenericCallView{Title: title, Kind: core.KindSearch, RawInput: pattern}
}

// globFilter is a ripgrep --glob filter: a pattern with a slash (other than
// a trailing one) is anchored at the workspace root, one without matches a
// file's name at any depth.
type globFilter struct {
	pattern  string
	anchored bool
}

func newGlobFilter(tool, pattern string) (globFilter, error) {
	p := strings.TrimSuffix(pattern, "/")
	anchored := strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "/")
	if !doublestar.ValidatePattern(p) {
		return globFilter{}, searchError(CodeSearchInvalidPattern, "%s pattern rejected: error parsing glob %q", tool, pattern)
	}
	return globFilter{pattern: p, anchored: anchored}, nil
}

// match reports whether the workspace-relative slash path rel matches.
func (g globFilter) match(rel string) bool {
	if g.anchored {
		return doublestar.MatchUnvalidated(g.pattern, rel)
	}
	return doublestar.MatchUnvalidated(g.pattern, path.Base(rel))
}

// searchStart resolves a search tool's optional path argument (default: the
// workspace root) and checks that it exists.
func searchStart(tool string, w *workspace, r *os.Root, arg *string) (target, error) {
	p := "."
	if arg != nil {
		p = *arg
	}
	t, err := w.resolve("search", p)
	if err != nil {
		return target{}, err
	}
	if _, err := r.Stat(t.rel); err != nil {
		switch {
		case isEscape(err):
			return target{}, rootError("search", t, err)
		case errors.Is(err, fs.ErrNotExist):
			return target{}, searchError(CodeSearchFailed, "%s search failed: %q was not found", tool, p)
		}
		return target{}, searchError(CodeSearchFailed, "%s search failed: %v", tool, err)
	}
	return t, nil
}

// walkOptions selects what a search walk visits.
type walkOptions struct {
	hidden bool // visit hidden (dot) files and directories below the start
}

// walkFiles calls fn for every regular file under start in lexical order,
// never following symbolic links and never entering VCS metadata. The
// workspace-relative slash path is passed to fn; unreadable entries are
// skipped. A cancelled ctx stops the walk with SEARCH_ABORTED.
func walkFiles(ctx context.Context, tool string, r *os.Root, start target, opt walkOptions,
	fn func(rel string, d fs.DirEntry) error) error {
	startRel := filepath.ToSlash(start.rel)
	for _, c := range strings.Split(startRel, "/") {
		if vcsDirs[c] {
			return nil
		}
	}
	return fs.WalkDir(r.FS(), startRel, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return searchAborted(tool)
		}
		if err != nil {
			if d != nil && d.IsDir() && p != startRel {
				return fs.SkipDir
			}
			return nil
		}
		if p != startRel {
			name := d.Name()
			if vcsDirs[name] && d.IsDir() {
				return fs.SkipDir
			}
			if !opt.hidden && strings.HasPrefix(name, ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(p, d)
	})
}
