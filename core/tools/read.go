package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"prism/core"
)

// Read bounds (dsh's READ_LIMIT, READ_MAX_LINE_LENGTH, READ_MAX_BYTES).
const (
	// ReadLimit is the default and maximum number of lines one read returns.
	ReadLimit = 2000
	// ReadMaxLineLength is the maximum characters kept of one line; a longer
	// line ends in "... (line truncated to N chars)".
	ReadMaxLineLength = 2000
	// ReadMaxBytes is the maximum bytes of selected lines one read returns.
	ReadMaxBytes = 50 * 1024
)

// binarySampleBytes is how much of a file's head is checked for NUL bytes.
const binarySampleBytes = 8192

// ReadArgs are the read tool's arguments. Offset and Limit are JSON numbers
// (the DSL type is "number"); the body refuses non-positive or fractional
// values with dsh's messages.
type ReadArgs struct {
	FilePath string   `json:"file_path"`
	Offset   *float64 `json:"offset,omitempty"`
	Limit    *float64 `json:"limit,omitempty"`
}

// ReadValue is the read tool's canonical value: the window it read.
type ReadValue struct {
	Path       string              `json:"path"`
	Offset     int                 `json:"offset"`
	Lines      []core.ReadFileLine `json:"lines"`
	TotalLines int                 `json:"totalLines"`
}

// ReadMeta is the read tool's presentation meta (dsh's FsReadMeta): the
// window a read card renders, which cannot be recovered from the text.
type ReadMeta struct {
	Path       string              `json:"path"`
	Offset     int                 `json:"offset"`
	Lines      []core.ReadFileLine `json:"lines"`
	TotalLines int                 `json:"totalLines"`
	Lang       string              `json:"lang,omitempty"`
}

const readParams = `{
	"file_path": {"type": "string", "required": true, "description": "Path to read, resolved by the filesystem backend."},
	"offset": {"type": "number", "description": "1-based first line to return. Defaults to 1."},
	"limit": {"type": "number", "description": "Maximum number of lines to return. Defaults to 2000."}
}`

const readSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"path": {"type": "string", "required": true},
	"offset": {"type": "integer", "required": true},
	"lines": {"type": "array", "required": true, "items": {"type": "object", "additionalProperties": false, "properties": {
		"number": {"type": "integer", "required": true},
		"text": {"type": "string", "required": true}}}},
	"totalLines": {"type": "integer", "required": true}}}`

// readInput is validated read arguments after defaulting.
type readInput struct {
	filePath      string
	offset, limit int
}

// parseReadArgs validates what the DSL cannot express (dsh's parseReadArgs).
func parseReadArgs(a ReadArgs) (readInput, error) {
	if strings.TrimSpace(a.FilePath) == "" {
		return readInput{}, errors.New("file_path must be a non-empty string")
	}
	in := readInput{filePath: a.FilePath, offset: 1, limit: ReadLimit}
	if a.Offset != nil {
		n, err := positiveInteger(*a.Offset, "offset")
		if err != nil {
			return readInput{}, err
		}
		in.offset = n
	}
	if a.Limit != nil {
		n, err := positiveInteger(*a.Limit, "limit")
		if err != nil {
			return readInput{}, err
		}
		if n > ReadLimit {
			return readInput{}, fmt.Errorf("limit must be less than or equal to %d", ReadLimit)
		}
		in.limit = n
	}
	return in, nil
}

func positiveInteger(f float64, name string) (int, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s must be a positive integer", name)
	}
	return int(f), nil
}

// readDefinition returns the read tool: a UTF-8 text file as numbered lines
// in dsh's <path>/<type>/<content> envelope, a read card from its meta.
func readDefinition(ws workspaceSource) core.Definition[ReadArgs, ReadValue] {
	return core.Definition[ReadArgs, ReadValue]{
		Name:        "read",
		Description: "Read a UTF-8 text file and return line-numbered content.",
		Parameters:  readParams,
		Output: core.Output[ReadArgs, ReadValue]{
			Schema: readSchema,
			Render: func(a ReadArgs, v ReadValue) (core.Content, error) {
				in, err := parseReadArgs(a)
				if err != nil {
					return nil, err
				}
				end := max(0, v.Offset-1)
				if n := len(v.Lines); n > 0 {
					end = v.Lines[n-1].Number
				}
				truncatedByBytes := len(v.Lines) < in.limit && end < v.TotalLines
				return core.Text(formatReadOutput(v.Path, v, truncatedByBytes)), nil
			},
			PresentationMeta: func(_ ReadArgs, v ReadValue) (any, error) {
				return ReadMeta{Path: v.Path, Offset: v.Offset, Lines: v.Lines, TotalLines: v.TotalLines,
					Lang: langFromPath(v.Path)}, nil
			},
		},
		Execute: func(ctx context.Context, a ReadArgs, run *core.Run) (ReadValue, error) {
			in, err := parseReadArgs(a)
			if err != nil {
				return ReadValue{}, err
			}
			w, err := ws(run)
			if err != nil {
				return ReadValue{}, err
			}
			t, err := w.resolve("read", in.filePath)
			if err != nil {
				return ReadValue{}, err
			}
			return readFile(ctx, w, t, in)
		},
		// Reads never mutate, so they may overlap with their siblings.
		IsConcurrencySafe: func(ReadArgs) bool { return true },
		PresentCall:       presentReadCall,
		PresentResult:     presentReadResult,
	}
}

// readFile reads one window of t.
func readFile(ctx context.Context, w *workspace, t target, in readInput) (ReadValue, error) {
	r, err := w.open()
	if err != nil {
		return ReadValue{}, err
	}
	defer r.Close()
	fi, err := r.Stat(t.rel)
	if err != nil {
		return ReadValue{}, rootError("read", t, err)
	}
	if !fi.Mode().IsRegular() {
		return ReadValue{}, fsError(CodeFsNotRegularFile, "cannot read %q: not a regular file", t.display)
	}
	f, err := r.Open(t.rel)
	if err != nil {
		return ReadValue{}, rootError("read", t, err)
	}
	defer f.Close()
	win := newWindow(in.offset, in.limit)
	if err := win.scan(ctx, &textReader{r: f, verb: "read", display: t.display}); err != nil {
		return ReadValue{}, err
	}
	if !win.truncatedByBytes && in.offset > win.total && !(win.total == 0 && in.offset == 1) {
		return ReadValue{}, fsError(CodeFsNotFound, "offset %d is out of range for %q (%d lines)", in.offset, t.display, win.total)
	}
	return ReadValue{Path: t.display, Offset: in.offset, Lines: win.lines, TotalLines: win.total}, nil
}

// window accumulates one bounded read window while counting every line
// (dsh's buildWindow): lines before offset and past limit are only counted,
// and the byte cap stops collecting but not counting.
type window struct {
	offset, limit    int
	lines            []core.ReadFileLine
	total            int
	outBytes         int
	truncatedByBytes bool
}

func newWindow(offset, limit int) *window {
	return &window{offset: offset, limit: limit, lines: []core.ReadFileLine{}}
}

// lineBufferCap bounds the bytes kept of one line: enough for one rune past
// the truncation point in any encoding width, so a giant line costs no more.
const lineBufferCap = (ReadMaxLineLength + 1) * utf8.UTFMax

// scan reads r to the end, splitting lines at "\n".
func (w *window) scan(ctx context.Context, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64*1024)
	var line []byte
	buf := make([]byte, 64*1024)
	for {
		if err := ctx.Err(); err != nil {
			return fsError(CodeFsAborted, "read aborted")
		}
		n, err := br.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			seg := chunk
			if i >= 0 {
				seg = chunk[:i]
			}
			if room := lineBufferCap - len(line); room > 0 {
				line = append(line, seg[:min(room, len(seg))]...)
			}
			if i < 0 {
				break
			}
			w.consume(line)
			line = line[:0]
			chunk = chunk[i+1:]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if len(line) > 0 {
		w.consume(line)
	}
	return nil
}

// consume counts one line and keeps it when it is inside the window.
func (w *window) consume(raw []byte) {
	w.total++
	if w.truncatedByBytes || w.total < w.offset || len(w.lines) >= w.limit {
		return
	}
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	text := truncateLine(raw, ReadMaxLineLength)
	size := len(text)
	if len(w.lines) > 0 {
		size++
	}
	if w.outBytes+size > ReadMaxBytes {
		w.truncatedByBytes = true
		return
	}
	w.outBytes += size
	w.lines = append(w.lines, core.ReadFileLine{Number: w.total, Text: text})
}

// truncateLine keeps the first max characters (runes) of a line and marks
// the cut.
func truncateLine(raw []byte, maxChars int) string {
	if utf8.RuneCount(raw) <= maxChars {
		return string(raw)
	}
	cut, n := 0, 0
	for n < maxChars {
		_, size := utf8.DecodeRune(raw[cut:])
		cut += size
		n++
	}
	return string(raw[:cut]) + fmt.Sprintf("... (line truncated to %d chars)", maxChars)
}

// textReader passes a file through while enforcing dsh's text rules: a NUL
// byte in the first 8 KiB is a binary file, and the whole stream must be
// valid UTF-8 (FsError FS_NOT_TEXT).
type textReader struct {
	r       io.Reader
	verb    string
	display string
	sampled int
	carry   []byte
}

func (t *textReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	chunk := p[:n]
	if t.sampled < binarySampleBytes {
		sample := chunk[:min(len(chunk), binarySampleBytes-t.sampled)]
		if bytes.IndexByte(sample, 0) >= 0 {
			return 0, fsError(CodeFsNotText, "cannot %s %q: binary file", t.verb, t.display)
		}
		t.sampled += len(sample)
	}
	data := append(t.carry, chunk...)
	cut := len(data) - incompleteTail(data)
	if !utf8.Valid(data[:cut]) {
		return 0, fsError(CodeFsNotText, "cannot %s %q: invalid UTF-8 text", t.verb, t.display)
	}
	t.carry = append(t.carry[:0:0], data[cut:]...)
	if errors.Is(err, io.EOF) && len(t.carry) > 0 {
		return 0, fsError(CodeFsNotText, "cannot %s %q: invalid UTF-8 text", t.verb, t.display)
	}
	return n, err
}

// incompleteTail returns how many trailing bytes of b start a UTF-8 sequence
// that the next chunk may complete.
func incompleteTail(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back
		}
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		}
		if need > i {
			return i
		}
		return 0
	}
	return 0
}

// formatReadOutput is dsh's model-facing read envelope: numbered lines and a
// continuation or end-of-file footer inside <path>/<type>/<content>.
func formatReadOutput(path string, v ReadValue, truncatedByBytes bool) string {
	end := max(0, v.Offset-1)
	if n := len(v.Lines); n > 0 {
		end = v.Lines[n-1].Number
	}
	var footer string
	switch {
	case truncatedByBytes:
		footer = fmt.Sprintf("(Output capped. Showing lines %d-%d. Use offset=%d to continue.)", v.Offset, end, end+1)
	case end < v.TotalLines:
		footer = fmt.Sprintf("(Showing lines %d-%d of %d. Use offset=%d to continue.)", v.Offset, end, v.TotalLines, end+1)
	default:
		footer = fmt.Sprintf("(End of file - total %d lines)", v.TotalLines)
	}
	var sb strings.Builder
	sb.WriteString("<path>" + path + "</path>\n<type>file</type>\n<content>\n")
	for _, l := range v.Lines {
		sb.WriteString(strconv.Itoa(l.Number))
		sb.WriteString(": ")
		sb.WriteString(l.Text)
		sb.WriteByte('\n')
	}
	if len(v.Lines) > 0 {
		sb.WriteByte('\n')
	}
	sb.WriteString(footer)
	sb.WriteString("\n</content>")
	return sb.String()
}

// langByExtension is dsh's small extension → highlighting hint map.
var langByExtension = map[string]string{
	"ts": "ts", "tsx": "tsx", "mts": "ts", "cts": "ts",
	"js": "js", "jsx": "jsx", "mjs": "js", "cjs": "js",
	"json": "json", "jsonc": "json",
	"py": "py", "rb": "rb", "go": "go", "rs": "rs", "java": "java",
	"c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp", "cxx": "cpp",
	"cs": "cs", "kt": "kotlin", "swift": "swift", "php": "php",
	"sh": "sh", "bash": "sh", "zsh": "sh",
	"yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini",
	"md": "md", "markdown": "md", "mdx": "mdx",
	"html": "html", "htm": "html", "css": "css", "scss": "scss", "less": "less",
	"sql": "sql", "xml": "xml", "lua": "lua",
}

// langFromPath derives the language hint from a path's extension; a dotfile
// without an extension and an unknown extension give "".
func langFromPath(path string) string {
	base := path[max(strings.LastIndexByte(path, '/'), strings.LastIndexByte(path, '\\'))+1:]
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 {
		return ""
	}
	return langByExtension[strings.ToLower(base[dot+1:])]
}

// presentReadCall is dsh's pending read card: a generic card titled by the
// file and window, with a follow-along location at the offset.
func presentReadCall(a ReadArgs) core.CallView {
	window := ""
	start := 1.0
	if a.Offset != nil {
		start = *a.Offset
	}
	switch {
	case a.Limit != nil && *a.Limit > 0:
		window = fmt.Sprintf(" (%s - %s)", jsNumber(start), jsNumber(start+*a.Limit-1))
	case a.Offset != nil:
		window = fmt.Sprintf(" (from line %s)", jsNumber(*a.Offset))
	}
	loc := core.FileLocation{Path: a.FilePath, Line: 1}
	if start == math.Trunc(start) && start >= 1 && start <= math.MaxInt32 {
		loc.Line = int(start)
	}
	return &core.GenericCallView{
		Title:     "Read " + a.FilePath + window,
		Kind:      core.KindRead,
		Locations: []core.FileLocation{loc},
	}
}

// presentReadResult is dsh's read card: the window narrowed from meta, with
// the envelope-stripped text as fallback content. An error, malformed meta
// or a text that is not the envelope gives the generic card.
func presentReadResult(_ ReadArgs, r core.ToolResult) core.ResultView {
	if r.IsError {
		return nil
	}
	meta, ok := readMetaFromMeta(r.Meta)
	if !ok || len(r.Content) != 1 {
		return nil
	}
	tb, ok := r.Content[0].(*core.TextBlock)
	if !ok {
		return nil
	}
	body, ok := readEnvelopeBody(tb.Text)
	if !ok {
		return nil
	}
	return &core.ReadResultView{
		Path:       meta.Path,
		Offset:     meta.Offset,
		Lines:      meta.Lines,
		TotalLines: meta.TotalLines,
		Lang:       meta.Lang,
		Content:    core.Text(body),
	}
}

// readEnvelopeBody returns the body of dsh's read envelope — what
// ^<path>[^\n]*</path>\n<type>file</type>\n<content>\n((?s:.*))\n</content>$
// captures — by string search (a regexp walks a large read's text at a
// fraction of the speed): text is a "<path>…</path>" line, then
// "<type>file</type>\n<content>\n", the body, and "\n</content>" at the
// very end.
func readEnvelopeBody(text string) (string, bool) {
	const head, tail = "<type>file</type>\n<content>\n", "\n</content>"
	line, rest, found := strings.Cut(text, "\n")
	if !found || !strings.HasPrefix(line, "<path>") || !strings.HasSuffix(line[len("<path>"):], "</path>") {
		return "", false
	}
	if !strings.HasPrefix(rest, head) || len(rest) < len(head)+len(tail) || !strings.HasSuffix(rest, tail) {
		return "", false
	}
	return rest[len(head) : len(rest)-len(tail)], true
}

// readMetaFromMeta narrows opaque meta to a read window (dsh's
// readMetaFromMeta): offset a 1-based integer, totalLines a non-negative
// integer, line numbers 1-based integers strictly increasing from offset and
// never past totalLines.
//
// A large read's meta holds thousands of lines, so it is first decoded
// straight into typed values (readMetaFast); meta that does not fit those
// exactly is narrowed from the generic tree as dsh does.
func readMetaFromMeta(meta json.RawMessage) (ReadMeta, bool) {
	if out, ok, handled := readMetaFast(meta); handled {
		return out, ok
	}
	return readMetaGeneric(meta)
}

// readMetaGeneric is readMetaFromMeta narrowing the generic tree.
func readMetaGeneric(meta json.RawMessage) (ReadMeta, bool) {
	obj, ok := metaObject(meta)
	if !ok {
		return ReadMeta{}, false
	}
	path, ok := obj["path"].(string)
	if !ok {
		return ReadMeta{}, false
	}
	offset, ok := metaInt(obj["offset"], 1)
	if !ok {
		return ReadMeta{}, false
	}
	total, ok := metaInt(obj["totalLines"], 0)
	if !ok {
		return ReadMeta{}, false
	}
	list, ok := obj["lines"].([]any)
	if !ok {
		return ReadMeta{}, false
	}
	out := ReadMeta{Path: path, Offset: offset, TotalLines: total, Lines: make([]core.ReadFileLine, 0, len(list))}
	if lang, present := obj["lang"]; present {
		s, ok := lang.(string)
		if !ok {
			return ReadMeta{}, false
		}
		out.Lang = s
	}
	prev := offset - 1
	for _, item := range list {
		l, ok := item.(map[string]any)
		if !ok {
			return ReadMeta{}, false
		}
		n, ok := metaInt(l["number"], 1)
		if !ok {
			return ReadMeta{}, false
		}
		text, ok := l["text"].(string)
		if !ok || n <= prev || n > total {
			return ReadMeta{}, false
		}
		prev = n
		out.Lines = append(out.Lines, core.ReadFileLine{Number: n, Text: text})
	}
	return out, true
}

// metaInt narrows a decoded JSON number to an integer no less than lo.
func metaInt(v any, lo int) (int, bool) {
	f, ok := v.(float64)
	if !ok {
		return 0, false
	}
	return metaFloatInt(f, lo)
}

// metaFloatInt narrows a JSON number to an integer no less than lo.
func metaFloatInt(f float64, lo int) (int, bool) {
	if f != math.Trunc(f) || f < float64(lo) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// wireReadMeta is read meta as typed values: a nil member was absent or
// null, which readMetaFast leaves to the generic path (lang, whose absence
// is allowed, is kept raw to tell null from absent).
type wireReadMeta struct {
	Path       *string        `json:"path"`
	Offset     *float64       `json:"offset"`
	TotalLines *float64       `json:"totalLines"`
	Lang       jsontext.Value `json:"lang"`
	Lines      *wireReadLines `json:"lines"`
}

// wireReadLines are the lines of read meta, each an object of exactly a
// number and a string text. They are read token by token (a 20,000-line
// read has 20,000 of them, and reflection would cost more than the text).
type wireReadLines []wireReadLine

type wireReadLine struct {
	Number float64
	Text   string
}

// errNotReadLines stops the typed decoding of lines of another shape.
var errNotReadLines = errors.New("not the read tool's lines")

// UnmarshalJSONFrom implements the JSON v2 engine's UnmarshalerFrom. The
// decoder has checked syntax, UTF-8 and duplicate names as it reads.
func (ls *wireReadLines) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return errNotReadLines
	}
	out := make(wireReadLines, 0, 64)
	var unq []byte // unquoting scratch
	for {
		switch dec.PeekKind() {
		case ']':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			*ls = out
			return nil
		case '{':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
		default:
			return errNotReadLines
		}
		var l wireReadLine
		var hasNumber, hasText bool
		for dec.PeekKind() == '"' {
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			switch string(name) {
			case `"number"`:
				v, err := dec.ReadValue()
				if err != nil || v.Kind() != '0' {
					return errNotReadLines
				}
				if l.Number, err = strconv.ParseFloat(string(v), 64); err != nil {
					return errNotReadLines
				}
				hasNumber = true
			case `"text"`:
				v, err := dec.ReadValue()
				if err != nil || v.Kind() != '"' {
					return errNotReadLines
				}
				if bytes.IndexByte(v, '\\') < 0 {
					l.Text = string(v[1 : len(v)-1])
				} else {
					if unq, err = jsontext.AppendUnquote(unq[:0], v); err != nil {
						return err
					}
					l.Text = string(unq)
				}
				hasText = true
			default:
				return errNotReadLines
			}
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' || !hasNumber || !hasText {
			return errNotReadLines
		}
		out = append(out, l)
	}
}

// readMetaFast is readMetaFromMeta for meta in exactly the read tool's
// shape: decoded by the JSON v2 engine (one validating pass, names matched
// exactly, duplicates and unknown members refused) into typed values, which
// are the values the generic tree holds, so the same checks give the same
// answer. handled is false for anything else (a member absent or null, an
// extra member, a name in another case, any decoding error); the caller
// then narrows the generic tree, which alone says what such meta means.
func readMetaFast(meta json.RawMessage) (out ReadMeta, ok, handled bool) {
	var w wireReadMeta
	if len(meta) == 0 || jsonv2.Unmarshal(meta, &w, jsonv2.RejectUnknownMembers(true)) != nil ||
		w.Path == nil || w.Offset == nil || w.TotalLines == nil || w.Lines == nil {
		return ReadMeta{}, false, false
	}
	offset, ok := metaFloatInt(*w.Offset, 1)
	if !ok {
		return ReadMeta{}, false, true
	}
	total, ok := metaFloatInt(*w.TotalLines, 0)
	if !ok {
		return ReadMeta{}, false, true
	}
	out = ReadMeta{Path: *w.Path, Offset: offset, TotalLines: total, Lines: make([]core.ReadFileLine, 0, len(*w.Lines))}
	if w.Lang != nil {
		// Present: a string (null and other kinds are the generic path's).
		if w.Lang.Kind() != '"' || jsonv2.Unmarshal(w.Lang, &out.Lang) != nil {
			return ReadMeta{}, false, false
		}
	}
	prev := offset - 1
	for _, l := range *w.Lines {
		n, ok := metaFloatInt(l.Number, 1)
		if !ok || n <= prev || n > total {
			return ReadMeta{}, false, true
		}
		prev = n
		out.Lines = append(out.Lines, core.ReadFileLine{Number: n, Text: l.Text})
	}
	return out, true, true
}

// jsNumber formats a number as JavaScript's String(n) does for the values a
// title shows.
func jsNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
