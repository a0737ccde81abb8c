package otel

import (
	"bytes"
	"encoding/json"
)

// message is one GenAI input or output message (gen-ai-input-messages.json,
// gen-ai-output-messages.json): a role and its parts.
type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

// part is one message part; which fields are set depends on Type: text and
// reasoning {content}, tool_call {id, name, arguments},
// tool_call_response {id, response} (the registry's example says result).
type part struct {
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Response  json.RawMessage `json:"response"`
	Result    json.RawMessage `json:"result"`
}

// messagesOf reads the messages attribute key (a JSON string, or the same
// structure as OTLP arrays and kvlists); nil when absent or unreadable.
func messagesOf(a attrs, key string) []message {
	s, ok := a.text(key)
	if !ok {
		return nil
	}
	var ms []message
	if err := json.Unmarshal([]byte(s), &ms); err != nil {
		return nil
	}
	return ms
}

// rawText returns a JSON value as text: a JSON string's content, else the
// value's compact JSON; "" for null or absent.
func rawText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) == nil {
		return buf.String()
	}
	return string(v)
}
