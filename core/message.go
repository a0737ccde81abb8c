package core

import (
	"crypto/rand"
	"encoding/hex"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message source kinds.
const (
	SourceUser   = "user"
	SourcePlugin = "plugin"
	SourceModel  = "model"
	SourceTool   = "tool"
)

// Message is one transcript message. Its identity (ID) is stable across the
// log, delivery and model requests.
type Message struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Content Content `json:"content"`
	Source  Source  `json:"source"`
}

// Source says where a message came from. Kind is one of the Source*
// constants; the other fields belong to particular kinds.
type Source struct {
	Kind string `json:"kind"`
	// CallID is set for tool results (kind "tool").
	CallID string `json:"callId,omitempty"`
	// Plugin names the producer of a plugin message (kind "plugin"), and Form
	// its context form (instructions, catalog, snapshot, notice, relay, recall).
	Plugin string `json:"plugin,omitempty"`
	Form   string `json:"form,omitempty"`
	// Summary is a notice's one-line summary (kind "plugin", form "notice").
	Summary string `json:"summary,omitempty"`
	// Provider and Model identify the model of an assistant message.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// RPCID and ClientTimeZone are set by dsh's web host on user messages.
	RPCID          string `json:"rpcId,omitempty"`
	ClientTimeZone string `json:"clientTimeZone,omitempty"`
}

// NewUserMessage returns a user-sourced message with one text block.
func NewUserMessage(id, text string) Message {
	return Message{ID: id, Role: RoleUser, Content: Text(text), Source: Source{Kind: SourceUser}}
}

// NewContextMessage returns a plugin-sourced user message, the form of an
// additional context (a hook's or a tool's note for the next request).
func NewContextMessage(id, plugin, text string) Message {
	return Message{ID: id, Role: RoleUser, Content: Text(text), Source: Source{Kind: SourcePlugin, Plugin: plugin}}
}

// NewToolResultMessage returns dsh's ToolResultMessage: a user-role message
// sourced from the call, holding exactly one tool-result block.
func NewToolResultMessage(id, callID string, content Content, isError bool) Message {
	if content == nil {
		content = Content{}
	}
	return Message{
		ID:   id,
		Role: RoleUser,
		Content: Content{&ToolResultBlock{
			ToolCallID: callID,
			Content:    content,
			IsError:    isError,
		}},
		Source: Source{Kind: SourceTool, CallID: callID},
	}
}

// ToolResultOf returns the single tool-result block of a tool-result message.
func (m Message) ToolResultOf() (*ToolResultBlock, bool) {
	if len(m.Content) != 1 {
		return nil, false
	}
	b, ok := m.Content[0].(*ToolResultBlock)
	return b, ok
}

// NewID returns a random RFC 4122 version 4 UUID, the form of dsh's message
// and session ids.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
