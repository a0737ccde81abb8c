// Package model holds prism's model clients: the Model interface the agent
// loop streams from, the chunk Assembler that turns a stream into an
// assistant message exactly as DeepSeek Harness's BlockAssembler does, an
// OpenAI-compatible chat-completions client (DeepSeek by default), and the
// offline Scripted model with its embedded demo script.
//
// Every model speaks dsh's StreamChunk protocol (core.StreamChunk):
// block-start, text-delta, reasoning-delta, tool-call-delta, block-end,
// usage and a terminal finish. Tool-call arguments stay raw strings.
package model

import (
	"context"
	"errors"
	"fmt"
	"io"

	"prism/core"
)

// Finish reasons carried by a finish chunk's Reason.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool-calls"
	FinishMaxTokens = "max-tokens"
)

// LLM failure codes (core.LLMFailure.Code) the clients produce; an HTTP
// status outside these maps to "HTTP_<status>", and an unrecognized
// provider finish reason to its upper-cased name.
const (
	CodeAborted         = "ABORTED"
	CodeTimeout         = "TIMEOUT"
	CodeTransport       = "TRANSPORT"
	CodeAuth            = "AUTH"
	CodeRateLimit       = "RATE_LIMIT"
	CodeQuotaExceeded   = "QUOTA_EXCEEDED"
	CodeInvalidRequest  = "INVALID_REQUEST"
	CodeContextWindow   = "CONTEXT_WINDOW_EXCEEDED"
	CodeServer          = "SERVER"
	CodeMalformed       = "MALFORMED_RESPONSE"
	CodeStreamClosed    = "STREAM_CLOSED"
	CodeStreamError     = "STREAM_ERROR"
	CodeEmptyResponse   = "EMPTY_RESPONSE"
	CodeScriptExhausted = "SCRIPT_EXHAUSTED"
	CodeUnknown         = "UNKNOWN"
)

// Info identifies a model route: the provider (dsh's provider route key,
// e.g. "deepseek" or "scripted") and the wire model name. Both are recorded
// in request/header, request/context and every assistant message's source.
type Info struct {
	Provider string
	Model    string
	// ContextWindow is the combined request/response capacity in tokens,
	// 0 when unknown.
	ContextWindow int64
}

// Request is one model call, fully assembled by the loop.
type Request struct {
	// System is the system prompt ("" for none).
	System string
	// Messages is the transcript derived from the session log, in order.
	Messages []core.Message
	// Tools are the model-visible tool schemas.
	Tools []core.ToolSchema
	// MaxTokens caps the output (0 = the provider's default).
	MaxTokens int64
	// Temperature, when set, is sent as is.
	Temperature *float64
	// SessionID identifies the calling session, for logs.
	SessionID string
}

// Model streams assistant responses. Implementations must be safe for
// concurrent use by several sessions unless documented otherwise.
type Model interface {
	// Info returns the model's route.
	Info() Info
	// Stream starts one model call. An error here (or from the first Recv)
	// happens before any chunk was produced. Cancelling ctx ends the stream:
	// Recv then returns an *Error with code ABORTED.
	Stream(ctx context.Context, req Request) (Stream, error)
}

// Stream is one model response in progress.
type Stream interface {
	// Recv returns the next chunk. It returns io.EOF after the terminal
	// finish chunk, and an *Error for every failure (transport, provider,
	// malformed data, cancellation).
	Recv() (core.StreamChunk, error)
	// Close releases the stream; it is safe to call more than once and
	// after Recv returned an error.
	Close() error
}

// Error is a model call failure, carrying dsh's provider-neutral
// LlmFailure facts (message, code, status, providerRetryAfterMs,
// requestId) — what turn/end{error} records.
type Error struct {
	Failure core.LLMFailure
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the failure's message and code (and the cause's text).
func (e *Error) Error() string {
	if e.Err != nil && e.Err.Error() != e.Failure.Message {
		return fmt.Sprintf("%s (%s): %v", e.Failure.Message, e.Failure.Code, e.Err)
	}
	return fmt.Sprintf("%s (%s)", e.Failure.Message, e.Failure.Code)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Failure: core.LLMFailure{Message: fmt.Sprintf(format, args...), Code: code}}
}

// FailureOf returns the LLMFailure facts of err: an *Error's own, a
// context cancellation as ABORTED, a deadline as TIMEOUT, anything else as
// UNKNOWN with the error's text.
func FailureOf(err error) core.LLMFailure {
	var me *Error
	switch {
	case err == nil:
		return core.LLMFailure{}
	case errors.As(err, &me):
		return me.Failure
	case errors.Is(err, context.Canceled):
		return core.LLMFailure{Message: "model request aborted by caller", Code: CodeAborted}
	case errors.Is(err, context.DeadlineExceeded):
		return core.LLMFailure{Message: "model request timed out", Code: CodeTimeout}
	}
	return core.LLMFailure{Message: err.Error(), Code: CodeUnknown}
}

// Collect drains a stream into chunks until io.EOF or an error, closing it.
// It is a convenience for tests and one-shot callers.
func Collect(s Stream) ([]core.StreamChunk, error) {
	defer s.Close()
	var out []core.StreamChunk
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

// chunk constructors keep the optional-pointer fields tidy.

// BlockStart returns a block-start chunk.
func BlockStart(index int, blockType string) core.StreamChunk {
	return core.StreamChunk{Type: core.ChunkBlockStart, Index: &index, BlockType: blockType}
}

// TextDelta returns a text-delta chunk.
func TextDelta(index int, text string) core.StreamChunk {
	return core.StreamChunk{Type: core.ChunkTextDelta, Index: &index, Text: &text}
}

// ReasoningDelta returns a reasoning-delta chunk.
func ReasoningDelta(index int, text string) core.StreamChunk {
	return core.StreamChunk{Type: core.ChunkReasoningDelta, Index: &index, Text: &text}
}

// ToolCallDelta returns a tool-call-delta chunk; name may be "".
func ToolCallDelta(index int, id, name, argumentsDelta string) core.StreamChunk {
	return core.StreamChunk{Type: core.ChunkToolCallDelta, Index: &index, ID: id, Name: name, ArgumentsDelta: &argumentsDelta}
}

// BlockEnd returns a block-end chunk carrying the assembled block.
func BlockEnd(index int, block core.ContentBlock) (core.StreamChunk, error) {
	data, err := core.MarshalNoEscape(block)
	if err != nil {
		return core.StreamChunk{}, fmt.Errorf("block-end %d: %w", index, err)
	}
	return core.StreamChunk{Type: core.ChunkBlockEnd, Index: &index, Block: data}, nil
}

// UsageChunk returns a usage chunk.
func UsageChunk(u core.TokenUsage) core.StreamChunk {
	return core.StreamChunk{Type: core.ChunkUsage, Usage: &u}
}

// FinishChunk returns a finish chunk.
func FinishChunk(reason string) core.StreamChunk {
	return core.StreamChunk{Type: core.ChunkFinish, Reason: reason}
}
