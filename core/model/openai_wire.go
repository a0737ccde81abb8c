package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"prism/core"
)

// params converts a Request to chat-completions parameters, as dsh's
// DeepSeek serializer: the system prompt first; user text blocks joined;
// each tool-result block a separate role "tool" message with its
// tool_call_id ("(no output)" when empty); assistant text as content (""
// rather than null), tool-call blocks as tool_calls with their raw
// argument strings, and reasoning passed back as reasoning_content only on
// tool-call turns (DeepSeek's thinking-mode rule). Blocks the text-only
// route cannot carry (images, unknown types) are skipped.
func (m *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case core.RoleSystem:
			msgs = append(msgs, openai.SystemMessage(joinText(msg.Content)))
		case core.RoleAssistant:
			msgs = append(msgs, assistantParam(msg))
		case core.RoleUser:
			var results []*core.ToolResultBlock
			for _, b := range msg.Content {
				if r, ok := b.(*core.ToolResultBlock); ok {
					results = append(results, r)
				}
			}
			if text := joinText(msg.Content); text != "" || len(results) == 0 {
				msgs = append(msgs, openai.UserMessage(text))
			}
			for _, r := range results {
				content := joinText(r.Content)
				if content == "" {
					content = "(no output)"
				}
				msgs = append(msgs, openai.ToolMessage(content, r.ToolCallID))
			}
		default:
			return openai.ChatCompletionNewParams{}, fmt.Errorf("message %d (%s) has unknown role %q", i, msg.ID, msg.Role)
		}
	}
	p := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(m.cfg.Model),
		Messages: msgs,
	}
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	for _, t := range req.Tools {
		var params map[string]any
		if len(t.Parameters) > 0 {
			dec := json.NewDecoder(bytes.NewReader(t.Parameters))
			dec.UseNumber()
			if err := dec.Decode(&params); err != nil {
				return openai.ChatCompletionNewParams{}, fmt.Errorf("tool %q parameters: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(params)}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = openai.Int(req.MaxTokens)
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	return p, nil
}

func assistantParam(msg core.Message) openai.ChatCompletionMessageParamUnion {
	var text, reasoning strings.Builder
	var calls []openai.ChatCompletionMessageToolCallUnionParam
	for _, b := range msg.Content {
		switch x := b.(type) {
		case *core.TextBlock:
			text.WriteString(x.Text)
		case *core.ReasoningBlock:
			reasoning.WriteString(x.Text)
		case *core.ToolCallBlock:
			calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       x.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: x.Name, Arguments: x.Arguments},
				},
			})
		}
	}
	a := openai.ChatCompletionAssistantMessageParam{}
	// Never null: a null content with no tool calls is refused by the API.
	a.Content.OfString = openai.String(text.String())
	if len(calls) > 0 {
		a.ToolCalls = calls
		if reasoning.Len() > 0 {
			a.SetExtraFields(map[string]any{"reasoning_content": reasoning.String()})
		}
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// joinText concatenates the text blocks of c with no separator.
func joinText(c core.Content) string {
	var sb strings.Builder
	for _, b := range c {
		if t, ok := b.(*core.TextBlock); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// wireChunk is one chat.completion.chunk payload, with DeepSeek's
// extensions (reasoning_content, cache-hit usage).
type wireChunk struct {
	Choices []struct {
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type wireUsage struct {
	PromptTokens         int64  `json:"prompt_tokens"`
	CompletionTokens     int64  `json:"completion_tokens"`
	PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
	PromptTokensDetails  *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage maps wire usage to disjoint counts: cache hits are subtracted from
// the prompt tokens (DeepSeek's prompt_tokens includes them).
func (u *wireUsage) usage() core.TokenUsage {
	var cacheRead int64
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil {
		cacheRead = *u.PromptTokensDetails.CachedTokens
	} else if u.PromptCacheHitTokens != nil {
		cacheRead = *u.PromptCacheHitTokens
	}
	out := core.TokenUsage{InputTokens: u.PromptTokens - cacheRead, OutputTokens: u.CompletionTokens, CacheReadTokens: cacheRead}
	if u.CompletionTokensDetails != nil && u.CompletionTokensDetails.ReasoningTokens != nil {
		out.ReasoningTokens = *u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

// openBlock is one harness block the translator is building.
type openBlock struct {
	index  int
	kind   string // text, reasoning, tool-call
	text   strings.Builder
	callID string
	name   string
}

// translator turns chat.completion.chunk payloads into StreamChunks, as
// dsh's DeepSeek translate: one harness block per content, reasoning or
// tool-call wire index, opened on its first non-empty delta and numbered in
// opening order; deltas are emitted as they arrive; block-ends, the latest
// usage and the finish are deferred to [DONE], so nothing follows finish.
type translator struct {
	next      int
	text      *openBlock
	reasoning *openBlock
	tools     map[int]*openBlock
	order     []*openBlock
	finish    *string
	usage     *core.TokenUsage
}

func newTranslator() *translator { return &translator{tools: map[int]*openBlock{}} }

func (t *translator) open(kind string) *openBlock {
	b := &openBlock{index: t.next, kind: kind}
	t.next++
	t.order = append(t.order, b)
	return b
}

// push translates one SSE data payload. done reports the [DONE] sentinel,
// after which out holds the deferred tail.
func (t *translator) push(data []byte) (out []core.StreamChunk, done bool, err *Error) {
	payload := bytes.TrimSpace(data)
	if string(payload) == "[DONE]" {
		return t.tail()
	}
	var c wireChunk
	if e := json.Unmarshal(payload, &c); e != nil {
		return nil, false, &Error{Failure: core.LLMFailure{
			Message: "malformed SSE payload: " + truncate(string(payload), 120), Code: CodeMalformed}, Err: e}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		var we struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		_ = json.Unmarshal(c.Error, &we)
		msg := we.Message
		if msg == "" {
			msg = "provider error while streaming: " + truncate(string(c.Error), 200)
		}
		return nil, false, &Error{Failure: core.LLMFailure{Message: msg, Code: CodeStreamError}}
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		// Reasoning first: thinking mode sends it before text. An empty
		// delta does not open a block.
		if d.ReasoningContent != nil && *d.ReasoningContent != "" {
			if t.reasoning == nil {
				t.reasoning = t.open(core.BlockReasoning)
				out = append(out, BlockStart(t.reasoning.index, core.BlockReasoning))
			}
			t.reasoning.text.WriteString(*d.ReasoningContent)
			out = append(out, ReasoningDelta(t.reasoning.index, *d.ReasoningContent))
		}
		if d.Content != nil && *d.Content != "" {
			if t.text == nil {
				t.text = t.open(core.BlockText)
				out = append(out, BlockStart(t.text.index, core.BlockText))
			}
			t.text.text.WriteString(*d.Content)
			out = append(out, TextDelta(t.text.index, *d.Content))
		}
		for _, call := range d.ToolCalls {
			b := t.tools[call.Index]
			if b == nil {
				b = t.open(core.BlockToolCall)
				t.tools[call.Index] = b
				out = append(out, BlockStart(b.index, core.BlockToolCall))
			}
			if call.ID != "" {
				b.callID = call.ID
			}
			if call.Function.Name != nil && *call.Function.Name != "" {
				b.name = *call.Function.Name
			}
			frag := ""
			if call.Function.Arguments != nil {
				frag = *call.Function.Arguments
			}
			b.text.WriteString(frag)
			out = append(out, ToolCallDelta(b.index, b.callID, b.name, frag))
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			r := *ch.FinishReason
			t.finish = &r
		}
	}
	// Usage rides on the finish chunk or a trailing usage-only chunk: keep
	// the latest.
	if c.Usage != nil {
		u := c.Usage.usage()
		t.usage = &u
	}
	return out, false, nil
}

// tail closes every block in order, then emits usage and the finish.
func (t *translator) tail() ([]core.StreamChunk, bool, *Error) {
	var out []core.StreamChunk
	for _, b := range t.order {
		var block core.ContentBlock
		switch b.kind {
		case core.BlockText:
			block = &core.TextBlock{Text: b.text.String()}
		case core.BlockReasoning:
			block = &core.ReasoningBlock{Text: b.text.String()}
		default:
			id := b.callID
			if id == "" { // the assembler's fallback for a call the provider left unnamed
				id = fmt.Sprintf("call-%d", b.index)
			}
			block = &core.ToolCallBlock{ID: id, Name: b.name, Arguments: b.text.String()}
		}
		c, err := BlockEnd(b.index, block)
		if err != nil {
			return out, true, &Error{Failure: core.LLMFailure{Message: err.Error(), Code: CodeMalformed}, Err: err}
		}
		out = append(out, c)
	}
	if t.usage != nil {
		out = append(out, UsageChunk(*t.usage))
	}
	reason := FinishStop
	if t.finish != nil {
		switch *t.finish {
		case "stop":
			reason = FinishStop
		case "tool_calls", "function_call":
			reason = FinishToolCalls
		case "length":
			reason = FinishMaxTokens
		default:
			// content_filter, insufficient_system_resource, …: the provider
			// stopped the response; it fails the call.
			return out, true, &Error{Failure: core.LLMFailure{
				Message: "model stopped: " + *t.finish, Code: strings.ToUpper(*t.finish)}}
		}
	}
	return append(out, FinishChunk(reason)), true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
