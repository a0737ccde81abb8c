package core

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// messageShapeHolds reports whether checkMessageShape would pass data of
// type typ, from one strict decode of only the members it reads (the JSON
// v2 engine with its defaults: names matched exactly, as a map lookup
// matches them; duplicate names and invalid UTF-8 refused). false means
// "not known to hold": the caller runs checkMessageShape, whose error
// text is the one reported. It never says true where checkMessageShape
// would refuse (the differential and fuzz tests hold it to that), so a
// valid event — every imported message and result — is not decoded into
// maps of interfaces.
func messageShapeHolds(typ string, data []byte) bool {
	var msg *shapeMessage
	switch typ {
	case EventUserMessage:
		msg = new(shapeMessage)
		if jsonv2.Unmarshal(data, msg) != nil {
			return false
		}
	case EventAssistantMessage, EventToolResult:
		var rec struct {
			Message *shapeMessage `json:"message"`
		}
		if jsonv2.Unmarshal(data, &rec) != nil || rec.Message == nil {
			return false
		}
		msg = rec.Message
	default:
		return false
	}
	role := RoleUser
	if typ == EventAssistantMessage {
		role = RoleAssistant
	}
	src := msg.Source
	if msg.ID == "" || msg.Role != role || src == nil || src.Kind == "" || msg.Content.Kind() != '[' {
		return false
	}
	switch typ {
	case EventAssistantMessage:
		return src.Kind == SourceModel && src.Provider != "" && src.Model != ""
	case EventToolResult:
		if src.Kind != SourceTool || src.CallID == "" {
			return false
		}
		var blocks []shapeBlock
		if jsonv2.Unmarshal(msg.Content, &blocks) != nil || len(blocks) != 1 {
			return false
		}
		b := blocks[0]
		return b.Type != nil && *b.Type == BlockToolResult && b.Content.Kind() == '[' && b.ToolCallID != nil && *b.ToolCallID == src.CallID
	}
	return true
}

// shapeMessage is what checkMessageShape reads of a message. A member of
// another type than these fails the decode (and the fast check).
type shapeMessage struct {
	ID     string `json:"id"`
	Role   string `json:"role"`
	Source *struct {
		Kind     string `json:"kind"`
		CallID   string `json:"callId"`
		Provider string `json:"provider"`
		Model    string `json:"model"`
	} `json:"source"`
	Content jsontext.Value `json:"content"`
}

// shapeBlock is what checkMessageShape reads of a tool result's block.
type shapeBlock struct {
	Type       *string        `json:"type"`
	ToolCallID *string        `json:"toolCallId"`
	Content    jsontext.Value `json:"content"`
}
