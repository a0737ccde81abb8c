package core

import (
	"bytes"
	"encoding/json"
)

// Result is the execution-local outcome of one tool call: *Success or
// *Failure. The two types make the wrong fields unrepresentable: a failure
// has no value and cannot conclude a turn.
type Result interface {
	// IsError reports whether the call failed.
	IsError() bool
	// Projection returns the durable projection presenters receive.
	Projection() ToolResult
	// Contexts returns the additional contexts for the next request.
	Contexts() []Message
	isResult()
}

// Success is a successful tool execution with its canonical value and the
// value's model projection.
type Success struct {
	// Value is the canonical value as lossless JSON. It is execution-local:
	// post-execute hooks and in-process callers see it; the log never does.
	Value json.RawMessage
	// Content is the model-facing content (output.render of the value).
	Content Content
	// Meta is the tool's presentation payload (output.presentationMeta), or nil.
	Meta json.RawMessage
	// AdditionalContexts are user messages for the model's next request.
	AdditionalContexts []Message
	// ConcludesTurn ends the agent turn after this result's batch commits.
	ConcludesTurn bool
}

// Failure is a failed tool execution.
type Failure struct {
	Error              ToolFailure
	Content            Content
	Meta               json.RawMessage // only when an execute wrapper authored it
	AdditionalContexts []Message
}

// ToolFailure is a failure's detail. Message carries no "Error: " envelope
// and is never persisted; Info is the durable {name, code}, present only for
// coded errors.
type ToolFailure struct {
	Message string     `json:"message"`
	Info    *ErrorInfo `json:"info,omitempty"`
}

// ToolResult is the durable projection of a result — what tool/result
// stores and what presentResult receives, live and on replay alike.
type ToolResult struct {
	Content Content         `json:"content"`
	IsError bool            `json:"isError"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// IsError implements Result.
func (*Success) IsError() bool { return false }

// IsError implements Result.
func (*Failure) IsError() bool { return true }

// Projection implements Result.
func (s *Success) Projection() ToolResult {
	return ToolResult{Content: s.Content, IsError: false, Meta: s.Meta}
}

// Projection implements Result.
func (f *Failure) Projection() ToolResult {
	return ToolResult{Content: f.Content, IsError: true, Meta: f.Meta}
}

// Contexts implements Result.
func (s *Success) Contexts() []Message { return s.AdditionalContexts }

// Contexts implements Result.
func (f *Failure) Contexts() []Message { return f.AdditionalContexts }

func (*Success) isResult() {}
func (*Failure) isResult() {}

// MarshalJSON writes dsh's ToolExecutionSuccess shape:
// {"isError":false,"value":…,"content":[…],"meta":…,…}.
func (s *Success) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"isError":false,"value":`)
	if len(s.Value) == 0 {
		buf.WriteString("null")
	} else {
		buf.Write(s.Value)
	}
	if err := writeField(&buf, "content", contentOrEmpty(s.Content)); err != nil {
		return nil, err
	}
	if len(s.Meta) > 0 {
		buf.WriteString(`,"meta":`)
		buf.Write(s.Meta)
	}
	if len(s.AdditionalContexts) > 0 {
		if err := writeField(&buf, "additionalContexts", s.AdditionalContexts); err != nil {
			return nil, err
		}
	}
	if s.ConcludesTurn {
		buf.WriteString(`,"concludesTurn":true`)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes dsh's ToolExecutionFailure shape:
// {"isError":true,"content":[…],"error":{"message":…,"info":…},…}.
func (f *Failure) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"isError":true`)
	if err := writeField(&buf, "content", contentOrEmpty(f.Content)); err != nil {
		return nil, err
	}
	if err := writeField(&buf, "error", f.Error); err != nil {
		return nil, err
	}
	if len(f.Meta) > 0 {
		buf.WriteString(`,"meta":`)
		buf.Write(f.Meta)
	}
	if len(f.AdditionalContexts) > 0 {
		if err := writeField(&buf, "additionalContexts", f.AdditionalContexts); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func contentOrEmpty(c Content) Content {
	if c == nil {
		return Content{}
	}
	return c
}

func writeField(buf *bytes.Buffer, key string, v any) error {
	data, err := MarshalNoEscape(v)
	if err != nil {
		return err
	}
	buf.WriteString(`,"` + key + `":`)
	buf.Write(data)
	return nil
}
