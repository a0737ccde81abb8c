package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"prism/core"
)

// MaxSectionBytes bounds the text of one section: a longer text (a huge
// file read, a long write) is indexed, and its snippet cut, by its first
// MaxSectionBytes bytes.
const MaxSectionBytes = 256 << 10

// Col is one of the index's columns. A phrase matches inside one column,
// never across two; a document's sections fill the columns.
type Col int

// The columns.
const (
	ColName Col = iota // a tool's name, a title
	ColBody            // message text, a call's arguments, a session's cwd
	ColMore            // a result's model content, reasoning
	ColErr             // error identity: name and code
	NumCols
)

// Section is one searchable part of a document, labelled for its snippet.
type Section struct {
	Col   Col
	Label string // text, reasoning, tool, arguments, result, error, title, cwd, failure
	Text  string
}

// Role says how an event's sections join the index.
type Role int

// Roles.
const (
	// RoleNone: the event has nothing to search (boundaries, chunks, …).
	RoleNone Role = iota
	// RoleDoc: the event is a document of its own.
	RoleDoc
	// RoleCall: a tool/call — it opens a card's document.
	RoleCall
	// RoleResult: an append-origin tool/result — it completes its card's
	// document (or is one, when its call was never logged).
	RoleResult
)

// Part is what one event contributes to the index.
type Part struct {
	Role     Role
	Kind     string // the document's kind (RoleDoc; KindCall for calls and results)
	CallID   string // RoleCall, RoleResult
	Tool     string // RoleCall
	IsError  bool   // a failure: a result's tool-result block has isError, a turn ended in error
	Code     string // the failure's code (error.code)
	Sections []Section
}

type messageJSON struct {
	Content []core.TextsBlock `json:"content"`
	Source  struct {
		Kind   string `json:"kind"`
		CallID string `json:"callId"`
	} `json:"source"`
}

// Extract returns what event e contributes to the index, decoding its data
// once. An event whose data does not decode contributes nothing.
//
// Indexed: user messages (kind user; context for messages a plugin or hook
// added), assistant messages (text and reasoning), tool calls (tool name
// and arguments; a JSON object's keys and values one "key: value" line
// each) with their results (model content, error name and code) as one
// card, session titles, the failure of a turn that ended in error, and
// model-only replacements of messages and results (kind event). Streamed
// assistant chunks are not: the assistant/message that ends the stream
// holds the same text.
func Extract(e *core.Event) Part {
	t, ok := decodeTexts(e)
	if !ok {
		return Part{}
	}
	return partOf(e, t)
}

// ExtractFacts is Extract for an event whose facts the caller has: when
// they hold the event's words (core.EventFacts.Texts, known from the
// appended value), the data is not decoded again.
func ExtractFacts(e *core.Event, f *core.EventFacts) Part {
	if f != nil {
		if t := f.Texts(); t != nil {
			return partOf(e, t)
		}
	}
	return Extract(e)
}

// unmarshalV1 is json.Unmarshal — encoding/json's semantics (names
// matched in any case, duplicates and invalid UTF-8 allowed), so what an
// event contributes does not change — run by the JSON v2 engine, which
// validates and decodes in one pass over the text instead of encoding/json's
// check, skip and decode of every level: a search's snippets decode each
// hit's events again, and results are most of their bytes.
func unmarshalV1(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, jsonv1.DefaultOptionsV1())
}

// DecodeTexts decodes the words of e's data as Extract does; ok is false
// for a type with none and for data that does not decode. A caller that
// hands them on (core.EventFacts.WithTexts) spares ExtractFacts the decode.
func DecodeTexts(e *core.Event) (*core.EventTexts, bool) { return decodeTexts(e) }

// FactsWithTexts returns core.FactsOf(e) holding the event's words when
// it has any (DecodeTexts; core.EventFacts.WithTexts), as an import hands
// them to the search index: from one decode of the data when
// core.FactsTextsOnce can, else from the two decodes apart.
func FactsWithTexts(e *core.Event) core.EventFacts {
	if f, ok := core.FactsTextsOnce(e); ok {
		return f
	}
	f := core.FactsOf(e)
	if t, ok := decodeTexts(e); ok {
		f = f.WithTexts(t)
	}
	return f
}

// decodeTexts decodes the words of e's data; ok is false for a type with
// none and for data that does not decode.
func decodeTexts(e *core.Event) (*core.EventTexts, bool) {
	switch e.Type {
	case core.EventUserMessage:
		var m messageJSON
		if unmarshalV1(e.Data, &m) != nil {
			return nil, false
		}
		return &core.EventTexts{Blocks: m.Content, SourceKind: m.Source.Kind}, true
	case core.EventAssistantMessage:
		var d struct {
			Message messageJSON `json:"message"`
		}
		if unmarshalV1(e.Data, &d) != nil {
			return nil, false
		}
		return &core.EventTexts{Blocks: d.Message.Content}, true
	case core.EventToolCall:
		var d core.ToolCall
		if unmarshalV1(e.Data, &d) != nil {
			return nil, false
		}
		return &core.EventTexts{CallID: d.CallID, Name: d.Name, Arguments: d.Arguments}, true
	case core.EventToolResult:
		var d struct {
			Message messageJSON     `json:"message"`
			Error   *core.ErrorInfo `json:"error"`
		}
		if unmarshalV1(e.Data, &d) != nil {
			return nil, false
		}
		return &core.EventTexts{Blocks: d.Message.Content, ResultCallID: d.Message.Source.CallID, Error: d.Error}, true
	case core.EventSessionTitle:
		var d core.SessionTitle
		if unmarshalV1(e.Data, &d) != nil {
			return nil, false
		}
		return &core.EventTexts{Title: d.Title}, true
	case core.EventTurnEnd:
		var d core.TurnEnd
		if unmarshalV1(e.Data, &d) != nil {
			return nil, false
		}
		return &core.EventTexts{Failure: d.Reason.Error}, true
	}
	return nil, false
}

// partOf is what event e, whose words are t, contributes to the index.
func partOf(e *core.Event, t *core.EventTexts) Part {
	replaced := e.SurfaceOp != nil && e.SurfaceOp.Replace
	switch e.Type {
	case core.EventUserMessage:
		kind := KindUser
		if t.SourceKind != core.SourceUser {
			kind = KindContext
		}
		if replaced {
			kind = KindEvent
		}
		return doc(kind, Section{ColBody, "text", blockText(t.Blocks, core.BlockText)})
	case core.EventAssistantMessage:
		kind := KindAssistant
		if replaced {
			kind = KindEvent
		}
		return doc(kind,
			Section{ColBody, "text", blockText(t.Blocks, core.BlockText)},
			Section{ColMore, "reasoning", blockText(t.Blocks, core.BlockReasoning)})
	case core.EventToolCall:
		return Part{Role: RoleCall, Kind: KindCall, CallID: t.CallID, Tool: t.Name,
			Sections: nonEmpty(Section{ColName, "tool", cut(t.Name)}, Section{ColBody, "arguments", cut(FlattenArgs(t.Arguments))})}
	case core.EventToolResult:
		var content string
		isError := false
		if c := t.Blocks; len(c) == 1 && c[0].Type == core.BlockToolResult {
			content, isError = blockText(c[0].Content, core.BlockText), c[0].IsError
		} else {
			content = blockText(c, core.BlockText)
		}
		var ident string
		code := ""
		if t.Error != nil {
			ident, code = strings.TrimSpace(t.Error.Name+" "+t.Error.Code), t.Error.Code
		}
		secs := nonEmpty(Section{ColMore, "result", content}, Section{ColErr, "error", cut(ident)})
		if replaced {
			return Part{Role: RoleDoc, Kind: KindEvent, Sections: secs}
		}
		return Part{Role: RoleResult, Kind: KindCall, CallID: t.ResultCallID, IsError: isError, Code: code, Sections: secs}
	case core.EventSessionTitle:
		return doc(KindTitle, Section{ColName, "title", cut(t.Title)})
	case core.EventTurnEnd:
		f := t.Failure
		if f == nil {
			return Part{}
		}
		p := doc(KindEvent, Section{ColBody, "failure", cut(f.Message)}, Section{ColErr, "error", cut(f.Code)})
		if p.Role != RoleNone {
			p.IsError, p.Code = true, f.Code
		}
		return p
	}
	return Part{}
}

// SessionSections are a session's own document: its title and working
// directory.
func SessionSections(title, cwd string) []Section {
	return nonEmpty(Section{ColName, "title", cut(title)}, Section{ColBody, "cwd", cut(cwd)})
}

func doc(kind string, secs ...Section) Part {
	secs = nonEmpty(secs...)
	if len(secs) == 0 {
		return Part{}
	}
	return Part{Role: RoleDoc, Kind: kind, Sections: secs}
}

func nonEmpty(secs ...Section) []Section {
	out := secs[:0]
	for _, s := range secs {
		if strings.TrimSpace(s.Text) != "" {
			out = append(out, s)
		}
	}
	return out
}

// blockText joins the text of the blocks of type typ (and of tool-result
// blocks' text), one block a line, cut to MaxSectionBytes.
func blockText(blocks []core.TextsBlock, typ string) string {
	var b strings.Builder
	var walk func([]core.TextsBlock)
	walk = func(bs []core.TextsBlock) {
		for _, x := range bs {
			if b.Len() >= MaxSectionBytes {
				return
			}
			switch {
			case x.Type == typ:
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(x.Text)
			case x.Type == core.BlockToolResult:
				walk(x.Content)
			}
		}
	}
	walk(blocks)
	return cut(b.String())
}

// cut bounds a section's text to MaxSectionBytes on a character boundary.
func cut(s string) string {
	if len(s) <= MaxSectionBytes {
		return s
	}
	i := MaxSectionBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// FlattenArgs returns a raw argument string as a user reads it: a JSON
// object or array becomes one line per value, "key: value" (strings
// unquoted and unescaped, so a path or a multi-line edit reads as written);
// anything else is returned as it is.
func FlattenArgs(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" || s[0] != '{' && s[0] != '[' {
		return raw
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var b bytes.Buffer
	type frame struct {
		object bool
		key    string
		want   bool // an object expects a key next
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return raw
		}
		if b.Len() > MaxSectionBytes {
			break
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				key := ""
				if top >= 0 {
					key = stack[top].key
					if stack[top].object {
						stack[top].want = true
					}
				}
				stack = append(stack, frame{object: d == '{', key: key, want: d == '{'})
			default:
				stack = stack[:top]
			}
			continue
		}
		if top >= 0 && stack[top].object && stack[top].want {
			stack[top].key, stack[top].want = tok.(string), false
			continue
		}
		key := ""
		if top >= 0 {
			key = stack[top].key
			if stack[top].object {
				stack[top].want = true
			}
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if key != "" {
			b.WriteString(key)
			b.WriteString(": ")
		}
		switch v := tok.(type) {
		case string:
			b.WriteString(v)
		case json.Number:
			b.WriteString(v.String())
		case bool:
			if v {
				b.WriteString("true")
			} else {
				b.WriteString("false")
			}
		case nil:
			b.WriteString("null")
		}
	}
	return b.String()
}
