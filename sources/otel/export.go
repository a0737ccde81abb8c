package otel

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"prism/core"
)

// ExportService is the service.name of the spans Export writes.
const ExportService = "prism"

// Export writes a session as GenAI spans, the inverse of Derive: per turn a
// trace with an invoke_agent span; per step with an assistant message a
// chat span (model, usage, output messages: text and tool_call parts whose
// arguments are the raw argument string); per call an execute_tool span
// (gen_ai.tool.call.id, .arguments and, on success, .result; on error
// status ERROR with the result's text and error.type). Every span carries
// gen_ai.conversation.id = the session id. Ids are derived from the session
// id, turn, step and call, so exporting the same log again gives the same
// spans (a receiver keeps them once). A turn still open ends at its last
// event.
func Export(h core.SessionHeader, events []core.Event) (*coltracepb.ExportTraceServiceRequest, error) {
	x := exporter{session: h.ID}
	for i := range events {
		if err := x.event(&events[i]); err != nil {
			return nil, fmt.Errorf("export session %s: event %d (%s): %w", h.ID, events[i].Seq, events[i].Type, err)
		}
	}
	x.closeTurn(0)
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", ExportService)}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "prism"},
			Spans: x.spans,
		}},
	}}}, nil
}

type exporter struct {
	session   string
	spans     []*tracepb.Span
	turn      int
	agent     *tracepb.Span
	last      int64 // ms
	user      []map[string]any
	stepStart int64                    // ms; the open step's start
	calls     map[string]*tracepb.Span // this turn's execute_tool spans by call id
}

func ms(t int64) uint64 {
	if t < 1 {
		t = 1
	}
	return uint64(t) * 1e6
}

// TurnTraceID is the trace id Export gives a session's turn (1-based).
func TurnTraceID(session string, turn int) []byte {
	return derivedID(session, 16, "trace", strconv.Itoa(turn))
}

func (x *exporter) id(n int, parts ...string) []byte { return derivedID(x.session, n, parts...) }

func derivedID(session string, n int, parts ...string) []byte {
	h := sha256.New()
	h.Write([]byte(session))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return h.Sum(nil)[:n]
}

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func kvInt(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func (x *exporter) span(name string, start int64, parent *tracepb.Span, attrs ...*commonpb.KeyValue) *tracepb.Span {
	turn := strconv.Itoa(x.turn)
	s := &tracepb.Span{TraceId: x.id(16, "trace", turn), SpanId: x.id(8, "span", turn, name, strconv.Itoa(len(x.spans))),
		Name: name, Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: ms(start), EndTimeUnixNano: ms(start),
		Attributes: append(attrs, kv(AttrConversationID, x.session))}
	if parent != nil {
		s.ParentSpanId = parent.SpanId
	}
	x.spans = append(x.spans, s)
	return s
}

func end(s *tracepb.Span, t int64) {
	if e := ms(t); e > s.EndTimeUnixNano {
		s.EndTimeUnixNano = e
	}
}

func (x *exporter) closeTurn(at int64) {
	if x.agent == nil {
		return
	}
	end(x.agent, max(at, x.last))
	x.agent = nil
}

func (x *exporter) event(e *core.Event) error {
	x.last = max(x.last, e.Time)
	switch e.Type {
	case core.EventTurnStart:
		x.closeTurn(e.Time)
		x.turn++
		x.user, x.calls = nil, map[string]*tracepb.Span{}
		x.agent = x.span("invoke_agent prism", e.Time, nil, kv(AttrOperation, OpInvokeAgent), kv(AttrAgentName, "prism"))
	case core.EventTurnEnd:
		var d core.TurnEnd
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		if x.agent != nil && d.Reason.Kind == core.TurnError && d.Reason.Error != nil {
			x.agent.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: d.Reason.Error.Message}
			x.agent.Attributes = append(x.agent.Attributes, kv(AttrErrorType, d.Reason.Error.Code))
		}
		x.closeTurn(e.Time)
	case core.EventStepStart:
		x.stepStart = e.Time
	case core.EventUserMessage:
		var m core.Message
		if err := json.Unmarshal(e.Data, &m); err != nil {
			return err
		}
		if m.Source.Kind == core.SourceUser {
			x.user = append(x.user, map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": m.Content.PlainText()}}})
		}
	case core.EventAssistantMessage:
		return x.assistant(e)
	case core.EventToolCall:
		var d core.ToolCall
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		if x.agent == nil {
			return nil
		}
		x.calls[d.CallID] = x.span("execute_tool "+d.Name, e.Time, x.agent, kv(AttrOperation, OpExecuteTool),
			kv(AttrToolName, d.Name), kv(AttrToolCallID, d.CallID), kv("gen_ai.tool.type", "function"), kv(AttrToolArguments, d.Arguments))
	case core.EventToolResult:
		var d core.ToolResultData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return err
		}
		s := x.calls[d.CallID()]
		if s == nil {
			return nil
		}
		end(s, e.Time)
		r := d.Projection()
		text := r.Content.PlainText()
		if r.IsError {
			code := "tool_error"
			if d.Error != nil && d.Error.Code != "" {
				code = d.Error.Code
			}
			s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: text}
			s.Attributes = append(s.Attributes, kv(AttrErrorType, code))
		} else {
			s.Attributes = append(s.Attributes, kv(AttrToolResult, text))
		}
	}
	return nil
}

func (x *exporter) assistant(e *core.Event) error {
	var d core.AssistantMessage
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return err
	}
	if x.agent == nil {
		return nil
	}
	var parts []any
	for _, b := range d.Message.Content {
		switch b := b.(type) {
		case *core.TextBlock:
			parts = append(parts, map[string]any{"type": "text", "content": b.Text})
		case *core.ReasoningBlock:
			parts = append(parts, map[string]any{"type": "reasoning", "content": b.Text})
		case *core.ToolCallBlock:
			parts = append(parts, map[string]any{"type": "tool_call", "id": b.ID, "name": b.Name, "arguments": b.Arguments})
		}
	}
	if parts == nil {
		parts = []any{}
	}
	out, err := json.Marshal([]any{map[string]any{"role": "assistant", "parts": parts}})
	if err != nil {
		return err
	}
	model := d.Message.Source.Model
	start := e.Time
	if x.stepStart > 0 && x.stepStart <= start {
		start = x.stepStart
	}
	s := x.span("chat "+model, start, x.agent, kv(AttrOperation, OpChat), kv(AttrProvider, d.Message.Source.Provider),
		kv(AttrRequestModel, model), kv(AttrResponseModel, model), kv(AttrOutputMessages, string(out)))
	s.Kind = tracepb.Span_SPAN_KIND_CLIENT
	if len(x.user) > 0 {
		in, err := json.Marshal(x.user)
		if err != nil {
			return err
		}
		s.Attributes = append(s.Attributes, kv(AttrInputMessages, string(in)))
		x.user = nil
	}
	if u := d.Usage; u != nil {
		s.Attributes = append(s.Attributes, kvInt(AttrInputTokens, u.InputTokens), kvInt(AttrOutputTokens, u.OutputTokens))
		if u.CacheReadTokens != 0 {
			s.Attributes = append(s.Attributes, kvInt(AttrCacheRead, u.CacheReadTokens))
		}
		if u.CacheWriteTokens != 0 {
			s.Attributes = append(s.Attributes, kvInt(AttrCacheCreation, u.CacheWriteTokens))
		}
		if u.ReasoningTokens != 0 {
			s.Attributes = append(s.Attributes, kvInt(AttrReasoning, u.ReasoningTokens))
		}
	}
	end(s, e.Time)
	return nil
}
