package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Card kinds of the render-intent vocabulary.
const (
	CardGeneric  = "generic"
	CardTerminal = "terminal"
	CardDiff     = "diff"
	CardSearch   = "search"
	CardRead     = "read"
	CardWeb      = "web"
)

// Call kinds of a generic call view.
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindDelete  = "delete"
	KindMove    = "move"
	KindSearch  = "search"
	KindExecute = "execute"
	KindFetch   = "fetch"
	KindOther   = "other"
)

var callKinds = map[string]bool{KindRead: true, KindEdit: true, KindDelete: true, KindMove: true,
	KindSearch: true, KindExecute: true, KindFetch: true, KindOther: true}

// FileLocation points at a file, optionally at a 1-based line.
type FileLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// FileDiff is one changed region of a file. OldText is nil for a new file
// (or an overwrite with no before-image). OldStart and NewStart, when the
// tool knows them, are the 1-based file lines where OldText and NewText
// begin (jsdiff's structuredPatch names); 0 means unknown — dsh's own meta
// carries no line numbers, and a pending edit does not know them yet.
type FileDiff struct {
	Path     string  `json:"path"`
	OldText  *string `json:"oldText"`
	NewText  string  `json:"newText"`
	OldStart int     `json:"oldStart,omitempty"`
	NewStart int     `json:"newStart,omitempty"`
}

// ReadFileLine is one line of a read, numbered as in the file (1-based).
type ReadFileLine struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// CallView is how a pending call is presented: *GenericCallView,
// *TerminalCallView or *DiffCallView. Views are pure projections of durable
// data; they are recomputed on every render and never stored.
type CallView interface {
	// Card returns the card discriminant.
	Card() string
	// Validate reports a view whose fields break the vocabulary's rules.
	Validate() error
	isCallView()
}

// ResultView is how a completed call is presented: *GenericResultView,
// *TerminalResultView, *DiffResultView, *SearchMatchesView, *SearchPathsView,
// *ReadResultView, *WebSearchView, *WebFetchView or *ImageResultView.
type ResultView interface {
	// Card returns the card discriminant.
	Card() string
	// ViewTitle returns the title that replaces the pending title ("" keeps it).
	ViewTitle() string
	// Validate reports a view whose fields break the vocabulary's rules.
	Validate() error
	isResultView()
}

// GenericCallView is the default pending card.
type GenericCallView struct {
	Title     string         `json:"title"`
	Kind      string         `json:"kind,omitempty"`
	RawInput  any            `json:"rawInput,omitempty"`
	Content   Content        `json:"content,omitempty"`
	Locations []FileLocation `json:"locations,omitempty"`
}

// TerminalCallView presents a shell command; Description is shown above the
// card, and a relative Cwd is resolved against the session's cwd.
type TerminalCallView struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
}

// DiffCallView presents the intended change of a file tool.
type DiffCallView struct {
	Title     string         `json:"title"`
	Diffs     []FileDiff     `json:"diffs"`
	Locations []FileLocation `json:"locations,omitempty"`
}

// GenericResultView shows the result content under an optional new title.
type GenericResultView struct {
	Title   string  `json:"title,omitempty"`
	Content Content `json:"content,omitempty"`
}

// TerminalResultView shows a command's output and how it exited. ExitCode
// and Signal are mutually exclusive.
type TerminalResultView struct {
	Title    string  `json:"title,omitempty"`
	Output   *string `json:"output,omitempty"`
	ExitCode *int    `json:"exitCode,omitempty"`
	Signal   string  `json:"signal,omitempty"`
}

// DiffResultView shows the applied hunks.
type DiffResultView struct {
	Title string     `json:"title,omitempty"`
	Diffs []FileDiff `json:"diffs"`
}

// SearchFileMatches groups the matches of one file.
type SearchFileMatches struct {
	Path    string            `json:"path"`
	Matches []SearchLineMatch `json:"matches"`
}

// SearchLineMatch is one matching line.
type SearchLineMatch struct {
	LineNumber int    `json:"lineNumber"`
	Line       string `json:"line"`
}

// SearchMatchesView shows grep-like matches grouped by file.
type SearchMatchesView struct {
	Title     string              `json:"title,omitempty"`
	Files     []SearchFileMatches `json:"files"`
	Truncated bool                `json:"truncated"`
	Total     int                 `json:"total"`
}

// SearchPathsView shows glob-like paths.
type SearchPathsView struct {
	Title     string   `json:"title,omitempty"`
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated"`
	Total     int      `json:"total"`
}

// ReadResultView shows numbered file lines. Offset is the requested 1-based
// start, kept even when Lines is empty; Content is envelope-stripped text.
type ReadResultView struct {
	Title      string         `json:"title,omitempty"`
	Path       string         `json:"path"`
	Offset     int            `json:"offset"`
	Lines      []ReadFileLine `json:"lines"`
	TotalLines int            `json:"totalLines"`
	Lang       string         `json:"lang,omitempty"`
	Content    Content        `json:"content,omitempty"`
}

// WebSource is one cited web page.
type WebSource struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Snippet     string `json:"snippet,omitempty"`
	PublishedAt string `json:"publishedAt,omitempty"`
}

// WebSearchView shows a web search's sources and answer.
type WebSearchView struct {
	Title     string      `json:"title,omitempty"`
	Sources   []WebSource `json:"sources"`
	Answer    string      `json:"answer,omitempty"`
	Truncated bool        `json:"truncated"`
}

// WebFetchView shows a fetched URL and its status.
type WebFetchView struct {
	Title      string `json:"title,omitempty"`
	URL        string `json:"url"`
	StatusCode int    `json:"statusCode"`
	Truncated  bool   `json:"truncated"`
}

// Card implements CallView.
func (*GenericCallView) Card() string { return CardGeneric }

// Card implements CallView.
func (*TerminalCallView) Card() string { return CardTerminal }

// Card implements CallView.
func (*DiffCallView) Card() string { return CardDiff }

func (*GenericCallView) isCallView()  {}
func (*TerminalCallView) isCallView() {}
func (*DiffCallView) isCallView()     {}

// Card implements ResultView.
func (*GenericResultView) Card() string { return CardGeneric }

// Card implements ResultView.
func (*TerminalResultView) Card() string { return CardTerminal }

// Card implements ResultView.
func (*DiffResultView) Card() string { return CardDiff }

// Card implements ResultView.
func (*SearchMatchesView) Card() string { return CardSearch }

// Card implements ResultView.
func (*SearchPathsView) Card() string { return CardSearch }

// Card implements ResultView.
func (*ReadResultView) Card() string { return CardRead }

// Card implements ResultView.
func (*WebSearchView) Card() string { return CardWeb }

// Card implements ResultView.
func (*WebFetchView) Card() string { return CardWeb }

// ViewTitle implements ResultView.
func (v *GenericResultView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *TerminalResultView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *DiffResultView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *SearchMatchesView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *SearchPathsView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *ReadResultView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *WebSearchView) ViewTitle() string { return v.Title }

// ViewTitle implements ResultView.
func (v *WebFetchView) ViewTitle() string { return v.Title }

func (*GenericResultView) isResultView()  {}
func (*TerminalResultView) isResultView() {}
func (*DiffResultView) isResultView()     {}
func (*SearchMatchesView) isResultView()  {}
func (*SearchPathsView) isResultView()    {}
func (*ReadResultView) isResultView()     {}
func (*WebSearchView) isResultView()      {}
func (*WebFetchView) isResultView()       {}

// Validate implements CallView.
func (v *GenericCallView) Validate() error {
	if v.Kind != "" && !callKinds[v.Kind] {
		return fmt.Errorf("generic call view: unknown kind %q", v.Kind)
	}
	if _, err := Snapshot(v.RawInput); err != nil {
		return fmt.Errorf("generic call view: rawInput: %w", err)
	}
	return validateLocations(v.Locations)
}

// Validate implements CallView.
func (v *TerminalCallView) Validate() error { return nil }

// Validate implements CallView.
func (v *DiffCallView) Validate() error {
	if err := validateDiffs(v.Diffs, false); err != nil {
		return fmt.Errorf("diff call view: %w", err)
	}
	return validateLocations(v.Locations)
}

// Validate implements ResultView.
func (v *GenericResultView) Validate() error { return nil }

// Validate implements ResultView.
func (v *TerminalResultView) Validate() error {
	if v.ExitCode != nil && v.Signal != "" {
		return errors.New("terminal result view: exitCode and signal are mutually exclusive")
	}
	return nil
}

// Validate implements ResultView: a settled diff card needs at least one hunk.
func (v *DiffResultView) Validate() error {
	if err := validateDiffs(v.Diffs, true); err != nil {
		return fmt.Errorf("diff result view: %w", err)
	}
	return nil
}

// Validate implements ResultView.
func (v *SearchMatchesView) Validate() error {
	if v.Total < 0 {
		return errors.New("search view: negative total")
	}
	for i, f := range v.Files {
		if f.Path == "" {
			return fmt.Errorf("search view: files[%d] has no path", i)
		}
	}
	return nil
}

// Validate implements ResultView.
func (v *SearchPathsView) Validate() error {
	if v.Total < 0 {
		return errors.New("search view: negative total")
	}
	return nil
}

// Validate implements ResultView.
func (v *ReadResultView) Validate() error {
	switch {
	case v.Path == "":
		return errors.New("read view: no path")
	case v.Offset < 0 || v.TotalLines < 0:
		return errors.New("read view: negative offset or totalLines")
	}
	return nil
}

// Validate implements ResultView.
func (v *WebSearchView) Validate() error {
	for i, s := range v.Sources {
		if s.URL == "" {
			return fmt.Errorf("web search view: sources[%d] has no url", i)
		}
	}
	return nil
}

// Validate implements ResultView.
func (v *WebFetchView) Validate() error {
	if v.URL == "" {
		return errors.New("web fetch view: no url")
	}
	return nil
}

func validateDiffs(diffs []FileDiff, nonEmpty bool) error {
	if nonEmpty && len(diffs) == 0 {
		return errors.New("no diffs")
	}
	for i, d := range diffs {
		if d.Path == "" {
			return fmt.Errorf("diffs[%d] has no path", i)
		}
		if d.OldStart < 0 || d.NewStart < 0 {
			return fmt.Errorf("diffs[%d] has a negative start line", i)
		}
	}
	return nil
}

func validateLocations(locs []FileLocation) error {
	for i, l := range locs {
		if l.Path == "" {
			return fmt.Errorf("locations[%d] has no path", i)
		}
		if l.Line < 0 {
			return fmt.Errorf("locations[%d] has a negative line", i)
		}
	}
	return nil
}

// MarshalJSON writes the view with its "card" tag first.
func (v *GenericCallView) MarshalJSON() ([]byte, error) {
	type plain GenericCallView
	return marshalKeyed("card", CardGeneric, (*plain)(v))
}

// MarshalJSON writes the view with its "card" tag first.
func (v *TerminalCallView) MarshalJSON() ([]byte, error) {
	type plain TerminalCallView
	return marshalKeyed("card", CardTerminal, (*plain)(v))
}

// MarshalJSON writes the view with its "card" tag first.
func (v *DiffCallView) MarshalJSON() ([]byte, error) {
	type plain DiffCallView
	p := *(*plain)(v)
	if p.Diffs == nil {
		p.Diffs = []FileDiff{}
	}
	return marshalKeyed("card", CardDiff, &p)
}

// MarshalJSON writes the view with its "card" tag first.
func (v *GenericResultView) MarshalJSON() ([]byte, error) {
	type plain GenericResultView
	return marshalKeyed("card", CardGeneric, (*plain)(v))
}

// MarshalJSON writes the view with its "card" tag first. It writes what
// marshalKeyed would (encoding/json's bytes) directly: the output may be a
// whole terminal's text, which encoding/json would copy and check again.
func (v *TerminalResultView) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if v.Output != nil {
		buf.Grow(len(*v.Output) + 64)
	}
	buf.WriteString(`{"card":"` + CardTerminal + `"`)
	if v.Title != "" {
		buf.WriteString(`,"title":`)
		appendJSONString(&buf, v.Title)
	}
	if v.Output != nil {
		buf.WriteString(`,"output":`)
		appendJSONString(&buf, *v.Output)
	}
	if v.ExitCode != nil {
		buf.WriteString(`,"exitCode":`)
		buf.WriteString(strconv.Itoa(*v.ExitCode))
	}
	if v.Signal != "" {
		buf.WriteString(`,"signal":`)
		appendJSONString(&buf, v.Signal)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes the view with its "card" tag first.
func (v *DiffResultView) MarshalJSON() ([]byte, error) {
	type plain DiffResultView
	p := *(*plain)(v)
	if p.Diffs == nil {
		p.Diffs = []FileDiff{}
	}
	return marshalKeyed("card", CardDiff, &p)
}

// MarshalJSON writes {"card":"search","shape":"matches",…}.
func (v *SearchMatchesView) MarshalJSON() ([]byte, error) {
	type plain SearchMatchesView
	p := *(*plain)(v)
	if p.Files == nil {
		p.Files = []SearchFileMatches{}
	}
	return marshalKeyed2("card", CardSearch, "shape", "matches", &p)
}

// MarshalJSON writes {"card":"search","shape":"paths",…}.
func (v *SearchPathsView) MarshalJSON() ([]byte, error) {
	type plain SearchPathsView
	p := *(*plain)(v)
	if p.Paths == nil {
		p.Paths = []string{}
	}
	return marshalKeyed2("card", CardSearch, "shape", "paths", &p)
}

// MarshalJSON writes the view with its "card" tag first (nil lines as
// []). It writes what marshalKeyed would (encoding/json's bytes) directly:
// a read of a large file is its lines twice, lines and content, which
// encoding/json would copy and check again at every Marshaler.
func (v *ReadResultView) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	size := 128 + len(v.Title) + len(v.Path) + len(v.Lang) + len(v.Lines)*32
	for _, l := range v.Lines {
		size += len(l.Text)
	}
	for _, b := range v.Content {
		if t, ok := b.(*TextBlock); ok && t != nil {
			size += len(t.Text) + 32
		}
	}
	buf.Grow(size + size/16) // escapes: tabs, quotes
	buf.WriteString(`{"card":"` + CardRead + `"`)
	if v.Title != "" {
		buf.WriteString(`,"title":`)
		appendJSONString(&buf, v.Title)
	}
	buf.WriteString(`,"path":`)
	appendJSONString(&buf, v.Path)
	buf.WriteString(`,"offset":` + strconv.Itoa(v.Offset) + `,"lines":[`)
	for i, l := range v.Lines {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"number":`)
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(l.Number), 10))
		buf.WriteString(`,"text":`)
		appendJSONString(&buf, l.Text)
		buf.WriteByte('}')
	}
	buf.WriteString(`],"totalLines":` + strconv.Itoa(v.TotalLines))
	if v.Lang != "" {
		buf.WriteString(`,"lang":`)
		appendJSONString(&buf, v.Lang)
	}
	if len(v.Content) > 0 {
		buf.WriteString(`,"content":`)
		if err := v.Content.appendJSON(&buf); err != nil {
			return nil, fmt.Errorf("read view: %w", err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes {"card":"web","kind":"search",…}.
func (v *WebSearchView) MarshalJSON() ([]byte, error) {
	type plain WebSearchView
	p := *(*plain)(v)
	if p.Sources == nil {
		p.Sources = []WebSource{}
	}
	return marshalKeyed2("card", CardWeb, "kind", "search", &p)
}

// MarshalJSON writes {"card":"web","kind":"fetch",…}.
func (v *WebFetchView) MarshalJSON() ([]byte, error) {
	type plain WebFetchView
	return marshalKeyed2("card", CardWeb, "kind", "fetch", (*plain)(v))
}

func marshalKeyed(key, tag string, v any) ([]byte, error) {
	return marshalKeyed2(key, tag, "", "", v)
}

// marshalKeyed2 writes {key:tag[, key2:tag2], …fields of v}.
func marshalKeyed2(key, tag, key2, tag2 string, v any) ([]byte, error) {
	body, err := MarshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + 40)
	buf.WriteByte('{')
	k, _ := MarshalNoEscape(key)
	t, _ := MarshalNoEscape(tag)
	buf.Write(k)
	buf.WriteByte(':')
	buf.Write(t)
	if key2 != "" {
		k2, _ := MarshalNoEscape(key2)
		t2, _ := MarshalNoEscape(tag2)
		buf.WriteByte(',')
		buf.Write(k2)
		buf.WriteByte(':')
		buf.Write(t2)
	}
	if len(body) > 2 {
		buf.WriteByte(',')
		buf.Write(body[1:])
	} else {
		buf.WriteByte('}')
	}
	return buf.Bytes(), nil
}

// DecodeCallView decodes and validates an untrusted call view. An unknown
// card kind or a malformed payload is an error; callers fall back to the
// generic card.
func DecodeCallView(data []byte) (CallView, error) {
	var head struct {
		Card string `json:"card"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("call view: %w", err)
	}
	var v CallView
	switch head.Card {
	case CardGeneric:
		v = new(GenericCallView)
	case CardTerminal:
		v = new(TerminalCallView)
	case CardDiff:
		v = new(DiffCallView)
	default:
		return nil, fmt.Errorf("call view: unknown card %q", head.Card)
	}
	if err := decodeView(data, v); err != nil {
		return nil, fmt.Errorf("%s call view: %w", head.Card, err)
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeResultView decodes and validates an untrusted result view.
func DecodeResultView(data []byte) (ResultView, error) {
	var head struct {
		Card  string `json:"card"`
		Shape string `json:"shape"`
		Kind  string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("result view: %w", err)
	}
	var v ResultView
	switch {
	case head.Card == CardGeneric:
		v = new(GenericResultView)
	case head.Card == CardTerminal:
		v = new(TerminalResultView)
	case head.Card == CardDiff:
		v = new(DiffResultView)
	case head.Card == CardSearch && head.Shape == "matches":
		v = new(SearchMatchesView)
	case head.Card == CardSearch && head.Shape == "paths":
		v = new(SearchPathsView)
	case head.Card == CardRead:
		v = new(ReadResultView)
	case head.Card == CardWeb && head.Kind == "search":
		v = new(WebSearchView)
	case head.Card == CardWeb && head.Kind == "fetch":
		v = new(WebFetchView)
	case head.Card == CardImage:
		v = new(ImageResultView)
	default:
		return nil, fmt.Errorf("result view: unknown card %q", head.Card)
	}
	if err := decodeView(data, v); err != nil {
		return nil, fmt.Errorf("%s result view: %w", head.Card, err)
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeView decodes data into v, ignoring the discriminant keys.
func decodeView(data []byte, v any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	delete(m, "card")
	switch v.(type) {
	case *SearchMatchesView, *SearchPathsView:
		delete(m, "shape")
	case *WebSearchView, *WebFetchView:
		delete(m, "kind")
	}
	rest, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
