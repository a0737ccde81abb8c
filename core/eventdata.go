package core

import (
	"encoding/json"
	"fmt"
)

// TurnStart is the data of turn/start.
type TurnStart struct {
	Turn int `json:"turn"`
}

// TurnEnd is the data of turn/end.
type TurnEnd struct {
	Turn   int           `json:"turn"`
	Reason TurnEndReason `json:"reason"`
}

// Turn-end reason kinds.
const (
	TurnCompleted   = "completed"
	TurnAborted     = "aborted"
	TurnBlocked     = "blocked"
	TurnError       = "error"
	TurnMaxTokens   = "max-tokens"
	TurnInterrupted = "interrupted"
)

// TurnEndReason says why a turn ended.
type TurnEndReason struct {
	Kind string `json:"kind"`
	// Reason is the cancel cause of an aborted turn: {kind: user|parent|hook|disposed|legacy}.
	// An interrupted turn has none (why a running prism closed it is a
	// "repair" note beside the log); logs written before that may carry one.
	Reason *CancelCause `json:"reason,omitempty"`
	// Error is the model failure of an errored turn.
	Error *LLMFailure `json:"error,omitempty"`
}

// CancelCause is dsh's AgentCancelCause.
type CancelCause struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
}

// LLMFailure is a model call failure recorded on turn/end{error}.
type LLMFailure struct {
	Message              string `json:"message"`
	Code                 string `json:"code"`
	Status               int    `json:"status,omitempty"`
	ProviderRetryAfterMs int64  `json:"providerRetryAfterMs,omitempty"`
	RequestID            string `json:"requestId,omitempty"`
}

// StepBoundary is the data of step/start and step/end.
type StepBoundary struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// AssistantChunk is the data of assistant/chunk: one streamed delta.
type AssistantChunk struct {
	Turn  int         `json:"turn"`
	Step  int         `json:"step"`
	Chunk StreamChunk `json:"chunk"`
}

// Stream chunk types.
const (
	ChunkBlockStart     = "block-start"
	ChunkTextDelta      = "text-delta"
	ChunkReasoningDelta = "reasoning-delta"
	ChunkToolCallDelta  = "tool-call-delta"
	ChunkBlockEnd       = "block-end"
	ChunkUsage          = "usage"
	ChunkFinish         = "finish"
)

// StreamChunk is one element of a model stream. Which fields are set depends
// on Type: block-start{index, blockType}, text-delta/reasoning-delta{index,
// text}, tool-call-delta{index, id, name?, argumentsDelta}, block-end{index,
// block}, usage{usage}, finish{reason, replayState?}.
type StreamChunk struct {
	Type           string          `json:"type"`
	Index          *int            `json:"index,omitempty"`
	BlockType      string          `json:"blockType,omitempty"`
	Text           *string         `json:"text,omitempty"`
	ID             string          `json:"id,omitempty"`
	Name           string          `json:"name,omitempty"`
	ArgumentsDelta *string         `json:"argumentsDelta,omitempty"`
	Block          json.RawMessage `json:"block,omitempty"`
	Usage          *TokenUsage     `json:"usage,omitempty"`
	// Reason is a finish chunk's reason kind (stop, tool-calls, max-tokens,
	// aborted, error, or a provider's own); on the wire it is dsh's
	// {"kind": …, "failure"?: …} object. A bare string is read too.
	Reason string `json:"-"`
	// Failure is the failure of an aborted or error finish.
	Failure     *LLMFailure     `json:"-"`
	ReplayState json.RawMessage `json:"replayState,omitempty"`
}

// finishReason is dsh's FinishReason wire shape.
type finishReason struct {
	Kind    string      `json:"kind"`
	Failure *LLMFailure `json:"failure,omitempty"`
}

type streamChunkJSON struct {
	Type           string          `json:"type"`
	Index          *int            `json:"index,omitempty"`
	BlockType      string          `json:"blockType,omitempty"`
	Text           *string         `json:"text,omitempty"`
	ID             string          `json:"id,omitempty"`
	Name           string          `json:"name,omitempty"`
	ArgumentsDelta *string         `json:"argumentsDelta,omitempty"`
	Block          json.RawMessage `json:"block,omitempty"`
	Usage          *TokenUsage     `json:"usage,omitempty"`
	Reason         json.RawMessage `json:"reason,omitempty"`
	ReplayState    json.RawMessage `json:"replayState,omitempty"`
}

// MarshalJSON writes the chunk in dsh's shape (a finish reason as an object).
func (c StreamChunk) MarshalJSON() ([]byte, error) {
	w := streamChunkJSON{Type: c.Type, Index: c.Index, BlockType: c.BlockType, Text: c.Text, ID: c.ID,
		Name: c.Name, ArgumentsDelta: c.ArgumentsDelta, Block: c.Block, Usage: c.Usage, ReplayState: c.ReplayState}
	if c.Reason != "" || c.Failure != nil {
		r, err := MarshalNoEscape(finishReason{Kind: c.Reason, Failure: c.Failure})
		if err != nil {
			return nil, err
		}
		w.Reason = r
	}
	return MarshalNoEscape(w)
}

// UnmarshalJSON reads dsh's chunk shape; a finish reason may be dsh's
// object or a bare string.
func (c *StreamChunk) UnmarshalJSON(data []byte) error {
	var w streamChunkJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = StreamChunk{Type: w.Type, Index: w.Index, BlockType: w.BlockType, Text: w.Text, ID: w.ID,
		Name: w.Name, ArgumentsDelta: w.ArgumentsDelta, Block: w.Block, Usage: w.Usage, ReplayState: w.ReplayState}
	if len(w.Reason) == 0 || string(w.Reason) == "null" {
		return nil
	}
	if w.Reason[0] == '"' {
		return json.Unmarshal(w.Reason, &c.Reason)
	}
	var r finishReason
	if err := json.Unmarshal(w.Reason, &r); err != nil {
		return fmt.Errorf("finish reason: %w", err)
	}
	c.Reason, c.Failure = r.Kind, r.Failure
	return nil
}

// TokenUsage counts the tokens of one model call.
type TokenUsage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoningTokens,omitempty"`
}

// Add returns the sum of u and v, field by field.
func (u TokenUsage) Add(v TokenUsage) TokenUsage {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.ReasoningTokens += v.ReasoningTokens
	return u
}

// AssistantMessage is the data of assistant/message.
type AssistantMessage struct {
	Turn        int         `json:"turn"`
	Step        int         `json:"step"`
	Message     Message     `json:"message"`
	Usage       *TokenUsage `json:"usage,omitempty"`
	Interrupted bool        `json:"interrupted,omitempty"`
}

// ToolCall is the data of tool/call: the raw model argument string, unparsed.
type ToolCall struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResultData is the data of tool/result: the model-facing message, the
// failure identity (only when the failure had one) and the tool's meta.
type ToolResultData struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	Message Message         `json:"message"`
	Error   *ErrorInfo      `json:"error,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// CallID returns the call the result answers (message.source.callId).
func (d *ToolResultData) CallID() string { return d.Message.Source.CallID }

// Projection returns the durable ToolResult a presenter receives.
func (d *ToolResultData) Projection() ToolResult {
	r := ToolResult{Meta: d.Meta}
	if b, ok := d.Message.ToolResultOf(); ok {
		r.Content = b.Content
		r.IsError = b.IsError
	}
	return r
}

// RequestContext is the data of request/context.
type RequestContext struct {
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	ContextWindow int64  `json:"contextWindow,omitempty"`
}

// RequestHeader is the data of request/header.
type RequestHeader struct {
	Header EpochHeader `json:"header"`
	Reason string      `json:"reason"` // initial | resume | change
}

// EpochHeader is the request configuration a model call was made with.
type EpochHeader struct {
	Config          json.RawMessage `json:"config"`
	AdapterDefaults json.RawMessage `json:"adapterDefaults,omitempty"`
	System          string          `json:"system,omitempty"`
	Tools           []ToolSchema    `json:"tools,omitempty"`
}

// ToolSchema is the model-visible part of a tool.
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// SessionTitle is the data of session/title.
type SessionTitle struct {
	Title string `json:"title"`
}

// Approval policies of a session (approval/policy): ask routes every "ask"
// decision to a person; never rejects them without asking.
const (
	ApprovalPolicyAsk   = "ask"
	ApprovalPolicyNever = "never"
)

// ApprovalAsked is the data of approval/asked: an "ask" decision that
// waits for a person. It is appended after the call's tool/call, before
// anything of its body.
type ApprovalAsked struct {
	ID       string `json:"id"`
	ToolName string `json:"toolName"`
	CallID   string `json:"callId,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ApprovalDecided is the data of approval/decided. dsh writes {id,
// outcome}; prism adds who decided, the decider's note and, for outcomes no
// person chose (a timeout, a cancelled turn, the session policy, crash
// repair), why.
type ApprovalDecided struct {
	ID      string          `json:"id"`
	Outcome ApprovalOutcome `json:"outcome"`
	// By names who decided, as far as the server knows them.
	By string `json:"by,omitempty"`
	// Note is what the decider wrote.
	Note string `json:"note,omitempty"`
	// Reason explains an outcome no person chose.
	Reason string `json:"reason,omitempty"`
}

// ApprovalPolicyData is the data of approval/policy: the session's policy
// from this event on.
type ApprovalPolicyData struct {
	Policy string `json:"policy"`
	Source string `json:"source,omitempty"`
}
