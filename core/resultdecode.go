package core

import (
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DecodeToolResultData decodes a tool/result's data into d: exactly what
// json.Unmarshal(data, d) gives, error included, but in one pass over the
// text for the shape core itself writes.
//
// encoding/json walks a result's text once per level of nesting and twice
// more per level for the content blocks' own decoder (check, skip, decode),
// so a 1 MB read result is walked six times before a page can show it. The
// fast path decodes with the JSON v2 engine (one validating pass) into wire
// types that accept only core's canonical shape: exact member names, no
// duplicates, valid UTF-8, text and toolResult blocks only, content arrays
// present. For that shape both decoders give the same value (the fuzz test
// holds them to it); anything else — an unknown member, a name in another
// case, a malformed value — is decoded by encoding/json as before, so its
// value and error text do not change.
func DecodeToolResultData(data []byte, d *ToolResultData) error {
	if decodeToolResultFast(data, d) {
		return nil
	}
	*d = ToolResultData{}
	return json.Unmarshal(data, d)
}

// strictV2 are the v2 options of every fast path: v2's defaults already
// match names exactly and reject duplicate names and invalid UTF-8.
var strictV2 = jsonv2.RejectUnknownMembers(true)

type wireResult struct {
	Turn    int            `json:"turn"`
	Step    int            `json:"step"`
	Message *wireMessage   `json:"message"`
	Error   *wireErrorInfo `json:"error"`
	Meta    jsontext.Value `json:"meta"`
}

type wireErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

type wireMessage struct {
	ID      string       `json:"id"`
	Role    string       `json:"role"`
	Content *[]wireBlock `json:"content"`
	Source  *wireSource  `json:"source"`
}

// wireSource is Source without its omitempty options (unmarshaling ignores
// them) so a change to Source's members shows as a compile error below.
type wireSource struct {
	Kind           string `json:"kind"`
	CallID         string `json:"callId"`
	Plugin         string `json:"plugin"`
	Form           string `json:"form"`
	Summary        string `json:"summary"`
	Provider       string `json:"provider"`
	Model          string `json:"model"`
	RPCID          string `json:"rpcId"`
	ClientTimeZone string `json:"clientTimeZone"`
}

type wireBlock struct {
	Type       *string      `json:"type"`
	Text       *string      `json:"text"`
	ToolCallID *string      `json:"toolCallId"`
	Content    *[]wireBlock `json:"content"`
	IsError    *bool        `json:"isError"`
}

// decodeToolResultFast is DecodeToolResultData's fast path: it reports
// false, leaving d in any state, when data is not in core's shape.
func decodeToolResultFast(data []byte, d *ToolResultData) bool {
	var w wireResult
	if jsonv2.Unmarshal(data, &w, strictV2) != nil || w.Message == nil || w.Message.Content == nil {
		return false
	}
	content, ok := wireContent(*w.Message.Content, true)
	if !ok {
		return false
	}
	*d = ToolResultData{Turn: w.Turn, Step: w.Step,
		Message: Message{ID: w.Message.ID, Role: w.Message.Role, Content: content}}
	if s := w.Message.Source; s != nil {
		d.Message.Source = Source(*s)
	}
	if w.Error != nil {
		d.Error = &ErrorInfo{Name: w.Error.Name, Code: w.Error.Code}
	}
	if w.Meta != nil {
		if w.Meta.Kind() != '{' && w.Meta.Kind() != '[' {
			return false // null and scalars: left to encoding/json
		}
		d.Meta = json.RawMessage(w.Meta)
	}
	return true
}

// wireContent converts decoded blocks to Content: text blocks, and (when
// results) toolResult blocks holding text blocks. ok is false for anything
// else, and for members another block type owns (encoding/json's block
// decoder tolerates some of them; the slow path keeps that behaviour).
func wireContent(blocks []wireBlock, results bool) (Content, bool) {
	out := make(Content, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		if b.Type == nil {
			return nil, false
		}
		switch *b.Type {
		case BlockText:
			if b.Text == nil || b.ToolCallID != nil || b.Content != nil || b.IsError != nil {
				return nil, false
			}
			out[i] = &TextBlock{Text: *b.Text}
		case BlockToolResult:
			if !results || b.Text != nil || b.ToolCallID == nil || b.Content == nil {
				return nil, false
			}
			inner, ok := wireContent(*b.Content, false)
			if !ok {
				return nil, false
			}
			r := &ToolResultBlock{ToolCallID: *b.ToolCallID, Content: inner}
			if b.IsError != nil {
				r.IsError = *b.IsError
			}
			out[i] = r
		default:
			return nil, false
		}
	}
	return out, true
}
