package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"unicode/utf8"

	"prism/core"
)

// Grep bounds (dsh's GREP_MAX_MATCHES and GREP_MAX_LINE_BYTES).
const (
	// GrepMaxMatches is how many matches one grep shows inline.
	GrepMaxMatches = 250
	// GrepMaxLineBytes caps one matched-line preview, cut on a UTF-8
	// boundary and marked " (line truncated)".
	GrepMaxLineBytes = 2000
)

// GrepArgs are the grep tool's arguments.
type GrepArgs struct {
	Pattern string  `json:"pattern"`
	Path    *string `json:"path,omitempty"`
	Include *string `json:"include,omitempty"`
}

// GrepMatch is one matching line: the workspace-relative file, the 1-based
// line number and the whole line without its terminator.
type GrepMatch struct {
	Path       string `json:"path"`
	LineNumber int    `json:"lineNumber"`
	Line       string `json:"line"`
}

// GrepValue is the grep tool's canonical value: every match found.
type GrepValue struct {
	Matches []GrepMatch `json:"matches"`
}

const grepParams = `{
	"pattern": {"type": "string", "required": true, "description": "Regular expression to search for (ripgrep syntax)."},
	"path": {"type": "string", "description": "File or directory to search. Defaults to the session workspace; a relative path resolves against it."},
	"include": {"type": "string", "description": "One glob filter for which files to search (e.g. \"*.ts\", \"*.{js,jsx}\"). Not a list; negation is not supported."}
}`

const grepSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"matches": {"type": "array", "required": true, "items": {"type": "object", "additionalProperties": false, "properties": {
		"path": {"type": "string", "required": true},
		"lineNumber": {"type": "integer", "required": true},
		"line": {"type": "string", "required": true}}}}}}`

// grepDescription is dsh's grep description with the default inline cap.
var grepDescription = "Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, grouped by file. " +
	fmt.Sprintf("Returns the first %d matches inline; a capped result reports where the complete match list was saved. ", GrepMaxMatches) +
	"Use read on a matched file for surrounding context."

// parseGrepArgs validates what the DSL cannot express (dsh's parseGrepArgs).
func parseGrepArgs(a GrepArgs) error {
	if a.Pattern == "" {
		return errors.New("pattern must be a non-empty string")
	}
	if a.Path != nil && strings.TrimSpace(*a.Path) == "" {
		return errors.New("path must be a non-empty string when given")
	}
	if a.Include != nil {
		return validateInclude(*a.Include)
	}
	return nil
}

// validateInclude accepts exactly one positive glob (a comma inside braces
// is alternation, not a list).
func validateInclude(include string) error {
	if strings.TrimSpace(include) == "" {
		return errors.New("include must be a non-empty glob when given")
	}
	if strings.HasPrefix(include, "!") {
		return errors.New(`include must be a positive glob filter; negated patterns ("!…") are not supported`)
	}
	depth := 0
	for _, c := range include {
		switch {
		case c == '{':
			depth++
		case c == '}':
			depth = max(0, depth-1)
		case c == ',' && depth == 0:
			return errors.New("include must be one glob, not a comma-separated list (use {a,b} alternation instead)")
		}
	}
	return nil
}

// grepDefinition returns the grep tool: a regular-expression search over
// the workspace, text grouped by file, a search card from its meta.
func grepDefinition(ws workspaceSource) core.Definition[GrepArgs, GrepValue] {
	return core.Definition[GrepArgs, GrepValue]{
		Name:        "grep",
		Description: grepDescription,
		Parameters:  grepParams,
		Timeout:     SearchTimeout,
		Output: core.Output[GrepArgs, GrepValue]{
			Schema: grepSchema,
			Render: func(_ GrepArgs, v GrepValue) (core.Content, error) {
				return core.Text(formatGrep(retainGrepMatches(v.Matches))), nil
			},
			PresentationMeta: func(_ GrepArgs, v GrepValue) (any, error) {
				return grepSearchMeta(retainGrepMatches(v.Matches), SearchMetaMaxBytes), nil
			},
		},
		Execute: func(ctx context.Context, a GrepArgs, run *core.Run) (GrepValue, error) {
			if err := parseGrepArgs(a); err != nil {
				return GrepValue{}, err
			}
			w, err := ws(run)
			if err != nil {
				return GrepValue{}, err
			}
			return grepSearch(ctx, w, a)
		},
		PresentCall: func(a GrepArgs) core.CallView {
			title := "Grep " + a.Pattern
			if a.Path != nil {
				title += " in " + *a.Path
			}
			if a.Include != nil {
				title += " (" + *a.Include + ")"
			}
			return searchCall(title, a.Pattern)
		},
		PresentResult: func(_ GrepArgs, r core.ToolResult) core.ResultView {
			if r.IsError {
				return nil
			}
			if v, ok := searchViewFromMeta(r.Meta).(*core.SearchMatchesView); ok {
				return v
			}
			return nil
		},
	}
}

// grepSearch runs one search: every regular, non-hidden, non-binary file
// under the start path in lexical order, one match per matching line.
func grepSearch(ctx context.Context, w *workspace, a GrepArgs) (GrepValue, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return GrepValue{}, searchError(CodeSearchInvalidPattern, "grep pattern rejected: regex parse error: %v", err)
	}
	var include *globFilter
	if a.Include != nil {
		g, err := newGlobFilter("grep", *a.Include)
		if err != nil {
			return GrepValue{}, err
		}
		include = &g
	}
	r, err := w.open()
	if err != nil {
		return GrepValue{}, err
	}
	defer r.Close()
	start, err := searchStart("grep", w, r, a.Path)
	if err != nil {
		return GrepValue{}, err
	}
	v := GrepValue{Matches: []GrepMatch{}}
	raw := 0
	err = walkFiles(ctx, "grep", r, start, walkOptions{}, func(rel string, _ fs.DirEntry) error {
		if include != nil && !include.match(rel) {
			return nil
		}
		f, err := r.FS().Open(rel)
		if err != nil {
			return nil // unreadable: skipped, as ripgrep reports and goes on
		}
		defer f.Close()
		found, n, err := grepFile(ctx, f, rel, re)
		if err != nil {
			return err
		}
		if raw += n; raw > searchRawMaxBytes {
			return searchError(CodeSearchRawOutputOverflow,
				"grep produced %d bytes of raw output, over the %d-byte cap; narrow pattern, path, or include and retry",
				raw, searchRawMaxBytes)
		}
		v.Matches = append(v.Matches, found...)
		return nil
	})
	if err != nil {
		return GrepValue{}, err
	}
	return v, nil
}

// grepFile returns the matching lines of one file and their byte count; a
// file with a NUL byte is binary and yields nothing.
func grepFile(ctx context.Context, f io.Reader, rel string, re *regexp.Regexp) ([]GrepMatch, int, error) {
	br := bufio.NewReaderSize(f, 64*1024)
	var out []GrepMatch
	size := 0
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if bytes.IndexByte(line, 0) >= 0 {
				return nil, 0, nil
			}
			body := bytes.TrimSuffix(line, []byte("\n"))
			if re.Match(body) {
				text := "(line is not valid UTF-8)"
				if utf8.Valid(body) {
					text = string(bytes.TrimSuffix(body, []byte("\r")))
				}
				out = append(out, GrepMatch{Path: rel, LineNumber: n, Line: text})
				size += len(body) + len(rel)
			}
		}
		if errors.Is(err, io.EOF) {
			return out, size, nil
		}
		if err != nil {
			return nil, 0, nil
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, 0, searchAborted("grep")
		}
	}
}

// retainedMatches is grep's inline page: previewed matches up to the cap.
type retainedMatches struct {
	items     []GrepMatch
	seen      int
	truncated bool
}

// retainGrepMatches previews every kept line and keeps the first
// GrepMaxMatches (dsh's retainGrepMatches), shared by the text and the meta.
func retainGrepMatches(all []GrepMatch) retainedMatches {
	kept := all[:min(len(all), GrepMaxMatches)]
	items := make([]GrepMatch, len(kept))
	for i, m := range kept {
		m.Line = previewLine(m.Line, GrepMaxLineBytes)
		items[i] = m
	}
	return retainedMatches{items: items, seen: len(all), truncated: len(all) > len(kept)}
}

// previewLine keeps the first maxBytes of a line on a UTF-8 boundary.
func previewLine(line string, maxBytes int) string {
	if len(line) <= maxBytes {
		return line
	}
	cut := maxBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + " (line truncated)"
}

// groupByFile groups matches by file in first-seen order.
func groupByFile(matches []GrepMatch) []core.SearchFileMatches {
	index := map[string]int{}
	var files []core.SearchFileMatches
	for _, m := range matches {
		i, ok := index[m.Path]
		if !ok {
			i = len(files)
			index[m.Path] = i
			files = append(files, core.SearchFileMatches{Path: m.Path})
		}
		files[i].Matches = append(files[i].Matches, core.SearchLineMatch{LineNumber: m.LineNumber, Line: m.Line})
	}
	if files == nil {
		files = []core.SearchFileMatches{}
	}
	return files
}

// formatGrep is dsh's grep text: a found-count header, the matches grouped
// by file as "Line N: text", and for a capped result the recovery footer.
// prism has no spill store, so the footer is dsh's could-not-save variant.
func formatGrep(r retainedMatches) string {
	if r.seen == 0 {
		return "No matches found"
	}
	var sb strings.Builder
	if r.truncated {
		fmt.Fprintf(&sb, "Found %d of %d matches", len(r.items), r.seen)
	} else if r.seen == 1 {
		sb.WriteString("Found 1 match")
	} else {
		fmt.Fprintf(&sb, "Found %d matches", r.seen)
	}
	sb.WriteString("\n\n")
	for i, f := range groupByFile(r.items) {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(f.Path)
		for _, m := range f.Matches {
			fmt.Fprintf(&sb, "\nLine %d: %s", m.LineNumber, m.Line)
		}
	}
	if r.truncated {
		sb.WriteString("\n\n(The complete result could not be saved; narrow pattern, path, or include to see more.)")
	}
	return sb.String()
}

// grepSearchMeta projects the retained matches into the search card's meta,
// bounded to maxBytes.
func grepSearchMeta(r retainedMatches, maxBytes int) SearchMatchesMeta {
	return capMatchesMeta(SearchMatchesMeta{
		Shape: "matches", Files: groupByFile(r.items), Truncated: r.truncated, Total: r.seen,
	}, maxBytes)
}
