package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
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

// A viewKind is the registration of one view type: its discriminants in
// JSON and the constructor the decoder fills. viewKinds is the one table of
// them: MarshalJSON takes a view's tags from its row (marshalView), and
// DecodeCallView and DecodeResultView find the row a view's tags name.
type viewKind struct {
	card     string            // the "card" tag
	key, tag string            // a second discriminant ("shape": "matches"), or none
	call     func() CallView   // a call view's constructor (nil for a result view)
	result   func() ResultView // a result view's constructor (nil for a call view)
}

// viewKinds registers every view type, once. A new kind is its block below
// (the type, Card, ViewTitle, its seal, Validate and a MarshalJSON that
// calls marshalView, side by side) and its row here.
var viewKinds = [...]viewKind{
	{card: CardGeneric, call: func() CallView { return new(GenericCallView) }},
	{card: CardTerminal, call: func() CallView { return new(TerminalCallView) }},
	{card: CardDiff, call: func() CallView { return new(DiffCallView) }},
	{card: CardGeneric, result: func() ResultView { return new(GenericResultView) }},
	{card: CardTerminal, result: func() ResultView { return new(TerminalResultView) }},
	{card: CardDiff, result: func() ResultView { return new(DiffResultView) }},
	{card: CardSearch, key: "shape", tag: "matches", result: func() ResultView { return new(SearchMatchesView) }},
	{card: CardSearch, key: "shape", tag: "paths", result: func() ResultView { return new(SearchPathsView) }},
	{card: CardRead, result: func() ResultView { return new(ReadResultView) }},
	{card: CardWeb, key: "kind", tag: "search", result: func() ResultView { return new(WebSearchView) }},
	{card: CardWeb, key: "kind", tag: "fetch", result: func() ResultView { return new(WebFetchView) }},
	{card: CardImage, result: func() ResultView { return new(ImageResultView) }},
}

// viewKindOf is viewKinds by view type (a pointer type), built once from
// the table and never changed.
var viewKindOf = func() map[reflect.Type]viewKind {
	m := make(map[reflect.Type]viewKind, len(viewKinds))
	for _, k := range viewKinds {
		var v any
		if k.call != nil {
			v = k.call()
		} else {
			v = k.result()
		}
		m[reflect.TypeOf(v)] = k
	}
	return m
}()

// RegisteredViews returns a fresh zero value of every view type viewKinds
// registers, in the table's order: for a renderer (package views) to check
// that it has a card for each kind.
func RegisteredViews() (calls []CallView, results []ResultView) {
	for _, k := range viewKinds {
		if k.call != nil {
			calls = append(calls, k.call())
		} else {
			results = append(results, k.result())
		}
	}
	return calls, results
}

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

// CallView is how a pending call is presented: one of the call view types
// of viewKinds (*GenericCallView, *TerminalCallView, *DiffCallView…;
// RegisteredViews lists them). Views are pure projections of durable data;
// they are recomputed on every render and never stored.
type CallView interface {
	// Card returns the card discriminant.
	Card() string
	// ViewTitle returns the pending card's title ("" for none).
	ViewTitle() string
	// Validate reports a view whose fields break the vocabulary's rules.
	Validate() error
	isCallView()
}

// ResultView is how a completed call is presented: one of the result view
// types of viewKinds (*GenericResultView, *TerminalResultView,
// *ReadResultView…; RegisteredViews lists them).
type ResultView interface {
	// Card returns the card discriminant.
	Card() string
	// ViewTitle returns the title that replaces the pending title ("" keeps it).
	ViewTitle() string
	// Validate reports a view whose fields break the vocabulary's rules.
	Validate() error
	isResultView()
}

// The view types, one block each: the type (and the value types only it
// uses), Card, ViewTitle, the seal (isCallView or isResultView), Validate
// and MarshalJSON. ImageResultView has a file of its own (imageview.go).

// GenericCallView is the default pending card.
type GenericCallView struct {
	Title     string         `json:"title"`
	Kind      string         `json:"kind,omitempty"`
	RawInput  any            `json:"rawInput,omitempty"`
	Content   Content        `json:"content,omitempty"`
	Locations []FileLocation `json:"locations,omitempty"`
}

// Card implements CallView.
func (*GenericCallView) Card() string { return CardGeneric }

// ViewTitle implements CallView.
func (v *GenericCallView) ViewTitle() string { return v.Title }

func (*GenericCallView) isCallView() {}

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

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *GenericCallView) MarshalJSON() ([]byte, error) {
	type plain GenericCallView
	return marshalView(v, (*plain)(v))
}

// TerminalCallView presents a shell command; Description is shown above the
// card, and a relative Cwd is resolved against the session's cwd.
type TerminalCallView struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
}

// Card implements CallView.
func (*TerminalCallView) Card() string { return CardTerminal }

// ViewTitle implements CallView.
func (v *TerminalCallView) ViewTitle() string { return v.Title }

func (*TerminalCallView) isCallView() {}

// Validate implements CallView.
func (v *TerminalCallView) Validate() error { return nil }

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *TerminalCallView) MarshalJSON() ([]byte, error) {
	type plain TerminalCallView
	return marshalView(v, (*plain)(v))
}

// DiffCallView presents the intended change of a file tool.
type DiffCallView struct {
	Title     string         `json:"title"`
	Diffs     []FileDiff     `json:"diffs"`
	Locations []FileLocation `json:"locations,omitempty"`
}

// Card implements CallView.
func (*DiffCallView) Card() string { return CardDiff }

// ViewTitle implements CallView.
func (v *DiffCallView) ViewTitle() string { return v.Title }

func (*DiffCallView) isCallView() {}

// Validate implements CallView.
func (v *DiffCallView) Validate() error {
	if err := validateDiffs(v.Diffs, false); err != nil {
		return fmt.Errorf("diff call view: %w", err)
	}
	return validateLocations(v.Locations)
}

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *DiffCallView) MarshalJSON() ([]byte, error) {
	type plain DiffCallView
	return marshalView(v, (*plain)(v))
}

// GenericResultView shows the result content under an optional new title.
type GenericResultView struct {
	Title   string  `json:"title,omitempty"`
	Content Content `json:"content,omitempty"`
}

// Card implements ResultView.
func (*GenericResultView) Card() string { return CardGeneric }

// ViewTitle implements ResultView.
func (v *GenericResultView) ViewTitle() string { return v.Title }

func (*GenericResultView) isResultView() {}

// Validate implements ResultView.
func (v *GenericResultView) Validate() error { return nil }

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *GenericResultView) MarshalJSON() ([]byte, error) {
	type plain GenericResultView
	return marshalView(v, (*plain)(v))
}

// TerminalResultView shows a command's output and how it exited. ExitCode
// and Signal are mutually exclusive.
type TerminalResultView struct {
	Title    string  `json:"title,omitempty"`
	Output   *string `json:"output,omitempty"`
	ExitCode *int    `json:"exitCode,omitempty"`
	Signal   string  `json:"signal,omitempty"`
}

// Card implements ResultView.
func (*TerminalResultView) Card() string { return CardTerminal }

// ViewTitle implements ResultView.
func (v *TerminalResultView) ViewTitle() string { return v.Title }

func (*TerminalResultView) isResultView() {}

// Validate implements ResultView.
func (v *TerminalResultView) Validate() error {
	if v.ExitCode != nil && v.Signal != "" {
		return errors.New("terminal result view: exitCode and signal are mutually exclusive")
	}
	return nil
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

// DiffResultView shows the applied hunks.
type DiffResultView struct {
	Title string     `json:"title,omitempty"`
	Diffs []FileDiff `json:"diffs"`
}

// Card implements ResultView.
func (*DiffResultView) Card() string { return CardDiff }

// ViewTitle implements ResultView.
func (v *DiffResultView) ViewTitle() string { return v.Title }

func (*DiffResultView) isResultView() {}

// Validate implements ResultView: a settled diff card needs at least one hunk.
func (v *DiffResultView) Validate() error {
	if err := validateDiffs(v.Diffs, true); err != nil {
		return fmt.Errorf("diff result view: %w", err)
	}
	return nil
}

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *DiffResultView) MarshalJSON() ([]byte, error) {
	type plain DiffResultView
	return marshalView(v, (*plain)(v))
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

// Card implements ResultView.
func (*SearchMatchesView) Card() string { return CardSearch }

// ViewTitle implements ResultView.
func (v *SearchMatchesView) ViewTitle() string { return v.Title }

func (*SearchMatchesView) isResultView() {}

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

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *SearchMatchesView) MarshalJSON() ([]byte, error) {
	type plain SearchMatchesView
	return marshalView(v, (*plain)(v))
}

// SearchPathsView shows glob-like paths.
type SearchPathsView struct {
	Title     string   `json:"title,omitempty"`
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated"`
	Total     int      `json:"total"`
}

// Card implements ResultView.
func (*SearchPathsView) Card() string { return CardSearch }

// ViewTitle implements ResultView.
func (v *SearchPathsView) ViewTitle() string { return v.Title }

func (*SearchPathsView) isResultView() {}

// Validate implements ResultView.
func (v *SearchPathsView) Validate() error {
	if v.Total < 0 {
		return errors.New("search view: negative total")
	}
	return nil
}

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *SearchPathsView) MarshalJSON() ([]byte, error) {
	type plain SearchPathsView
	return marshalView(v, (*plain)(v))
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

// Card implements ResultView.
func (*ReadResultView) Card() string { return CardRead }

// ViewTitle implements ResultView.
func (v *ReadResultView) ViewTitle() string { return v.Title }

func (*ReadResultView) isResultView() {}

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

// Card implements ResultView.
func (*WebSearchView) Card() string { return CardWeb }

// ViewTitle implements ResultView.
func (v *WebSearchView) ViewTitle() string { return v.Title }

func (*WebSearchView) isResultView() {}

// Validate implements ResultView.
func (v *WebSearchView) Validate() error {
	for i, s := range v.Sources {
		if s.URL == "" {
			return fmt.Errorf("web search view: sources[%d] has no url", i)
		}
	}
	return nil
}

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *WebSearchView) MarshalJSON() ([]byte, error) {
	type plain WebSearchView
	return marshalView(v, (*plain)(v))
}

// WebFetchView shows a fetched URL and its status.
type WebFetchView struct {
	Title      string `json:"title,omitempty"`
	URL        string `json:"url"`
	StatusCode int    `json:"statusCode"`
	Truncated  bool   `json:"truncated"`
}

// Card implements ResultView.
func (*WebFetchView) Card() string { return CardWeb }

// ViewTitle implements ResultView.
func (v *WebFetchView) ViewTitle() string { return v.Title }

func (*WebFetchView) isResultView() {}

// Validate implements ResultView.
func (v *WebFetchView) Validate() error {
	if v.URL == "" {
		return errors.New("web fetch view: no url")
	}
	return nil
}

// MarshalJSON writes the view with its discriminants first (marshalView).
func (v *WebFetchView) MarshalJSON() ([]byte, error) {
	type plain WebFetchView
	return marshalView(v, (*plain)(v))
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

// marshalView writes view v as {"card":…[, key:tag], …fields of body}, its
// discriminants taken from v's row in viewKinds. body is v converted to a
// type without methods (type plain T; (*plain)(v)), so encoding/json writes
// its fields. A list field without omitempty is written as [] when nil: a
// reader of a view always finds its lists.
func marshalView(v, body any) ([]byte, error) {
	k, ok := viewKindOf[reflect.TypeOf(v)]
	if !ok {
		return nil, fmt.Errorf("core: %T is not a registered view", v)
	}
	return marshalKeyed2("card", k.card, k.key, k.tag, emptyLists(body))
}

// emptyLists returns body (a pointer to a struct), or a copy of it whose nil
// list fields without omitempty are empty lists.
func emptyLists(body any) any {
	p := reflect.ValueOf(body)
	t := p.Elem().Type()
	var cp reflect.Value
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Slice || !f.IsExported() || name == "-" || strings.Contains(","+opts+",", ",omitempty,") {
			continue
		}
		if !p.Elem().Field(i).IsNil() {
			continue
		}
		if !cp.IsValid() {
			cp = reflect.New(t)
			cp.Elem().Set(p.Elem())
		}
		cp.Elem().Field(i).Set(reflect.MakeSlice(f.Type, 0, 0))
	}
	if cp.IsValid() {
		return cp.Interface()
	}
	return body
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
	fields, card, err := viewHead(data)
	if err != nil {
		return nil, fmt.Errorf("call view: %w", err)
	}
	k := findViewKind(fields, card, true)
	if k == nil {
		return nil, fmt.Errorf("call view: unknown card %q", card)
	}
	v := k.call()
	if err := decodeView(fields, k, v); err != nil {
		return nil, fmt.Errorf("%s call view: %w", card, err)
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeResultView decodes and validates an untrusted result view.
func DecodeResultView(data []byte) (ResultView, error) {
	fields, card, err := viewHead(data)
	if err != nil {
		return nil, fmt.Errorf("result view: %w", err)
	}
	k := findViewKind(fields, card, false)
	if k == nil {
		return nil, fmt.Errorf("result view: unknown card %q", card)
	}
	v := k.result()
	if err := decodeView(fields, k, v); err != nil {
		return nil, fmt.Errorf("%s result view: %w", card, err)
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}

// viewHead splits a view's JSON object into its fields and reads its
// "card" tag ("" when absent).
func viewHead(data []byte) (map[string]json.RawMessage, string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, "", err
	}
	var card string
	if raw, ok := fields["card"]; ok {
		if err := json.Unmarshal(raw, &card); err != nil {
			return nil, "", fmt.Errorf("card: %w", err)
		}
	}
	return fields, card, nil
}

// findViewKind returns the row of viewKinds a view's fields name: its card
// tag and, for a row with a second discriminant, that key's tag. call
// chooses call views or result views.
func findViewKind(fields map[string]json.RawMessage, card string, call bool) *viewKind {
	for i := range viewKinds {
		k := &viewKinds[i]
		if k.card != card || (k.call != nil) != call {
			continue
		}
		if k.key != "" {
			var tag string
			if json.Unmarshal(fields[k.key], &tag) != nil || tag != k.tag {
				continue
			}
		}
		return k
	}
	return nil
}

// decodeView decodes a view's fields into v, ignoring the discriminant
// keys of its row; any other unknown field is an error.
func decodeView(fields map[string]json.RawMessage, k *viewKind, v any) error {
	delete(fields, "card")
	if k.key != "" {
		delete(fields, k.key)
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
