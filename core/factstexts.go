package core

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// FactsTextsOnce decodes, in one pass over e's data, what two decodes
// give for the types the search index reads (user/message,
// assistant/message, tool/call, tool/result, session/title, turn/end):
// FactsOf(e) holding the event's words (EventFacts.Texts) as
// core/search.DecodeTexts decodes them. An import computes both for every
// event; decoding them apart walks each event's data twice.
//
// It reports false, and the caller decodes them apart (core/search's
// FactsWithTexts does), for any other type and for data it cannot decode
// in its strict way: the JSON v2 engine under encoding/json's semantics
// (as DecodeTexts decodes), but refusing duplicate member names and
// invalid UTF-8, and any value of a member either decode reads that has
// the wrong type. For data it accepts, each of the two decodes reads a
// subset of its members into the same Go types, without error, so it gives
// both the values they give (the differential and fuzz tests in
// core/search hold it to FactsOf and DecodeTexts).
func FactsTextsOnce(e *Event) (EventFacts, bool) {
	switch e.Type {
	case EventUserMessage, EventAssistantMessage, EventToolCall, EventToolResult, EventSessionTitle, EventTurnEnd:
	default:
		return EventFacts{}, false
	}
	var j factsTextsJSON
	if jsonv2.Unmarshal(e.Data, &j, jsonv1.DefaultOptionsV1(), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false)) != nil {
		return EventFacts{}, false
	}
	// FactsOf's rules, on the same members.
	f := EventFacts{reasonKind: j.Reason.Kind, mode: j.Mode, title: j.Title, usage: j.Usage}
	var t EventTexts
	switch e.Type {
	case EventToolCall:
		f.callID = j.CallID
		t = EventTexts{CallID: j.CallID, Name: j.Name, Arguments: j.Arguments}
	case EventToolResult:
		f.callID = j.Message.Source.CallID
		c := j.Message.Content
		f.isError = len(c) == 1 && c[0].Type == BlockToolResult && c[0].IsError
		if j.Error != nil {
			f.errorCode = j.Error.Code
		}
		t = EventTexts{Blocks: c, ResultCallID: j.Message.Source.CallID, Error: j.Error}
	case EventAssistantMessage:
		f.model = j.Message.Source.Model
		t = EventTexts{Blocks: j.Message.Content}
	case EventUserMessage:
		f.userSource = j.Source.Kind
		for _, b := range j.Content {
			if b.Type == BlockText {
				f.userTexts = append(f.userTexts, b.Text)
			}
		}
		t = EventTexts{Blocks: j.Content, SourceKind: j.Source.Kind}
	case EventSessionTitle:
		t = EventTexts{Title: j.Title}
	case EventTurnEnd:
		t = EventTexts{Failure: j.Reason.Error}
	}
	return f.WithTexts(&t), true
}

// factsTextsJSON is the union of factsJSON and the structs
// core/search.DecodeTexts decodes each type into: every member either
// reads, each in the Go type both read it as (where factsJSON reads less
// of a value — a block's type and text, an error's code, a reason's
// kind — the texts' type is the larger one, of the same members).
type factsTextsJSON struct {
	Turn       int           `json:"turn"`       // tool/call, turn/end (DecodeTexts' ToolCall, TurnEnd)
	Step       int           `json:"step"`       // tool/call
	CallID     string        `json:"callId"`     // tool/call
	Name       string        `json:"name"`       // tool/call
	Arguments  string        `json:"arguments"`  // tool/call
	RootCallID string        `json:"rootCallId"` // FactsOf reads it for every type
	Reason     TurnEndReason `json:"reason"`     // turn/end
	Mode       string        `json:"mode"`
	Title      string        `json:"title"`   // session/title
	Content    []TextsBlock  `json:"content"` // user/message: the data is the message
	Source     struct {
		Kind   string `json:"kind"`
		CallID string `json:"callId"`
	} `json:"source"`
	Message struct { // tool/result, assistant/message
		Content []TextsBlock `json:"content"`
		Source  struct {
			Kind   string `json:"kind"`
			CallID string `json:"callId"`
			Model  string `json:"model"`
		} `json:"source"`
	} `json:"message"`
	Error *ErrorInfo  `json:"error"`
	Usage *TokenUsage `json:"usage"`
}
