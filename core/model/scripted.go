package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"prism/core"
)

// Script is a list of assistant steps the Scripted model plays in order,
// one step per model call.
type Script struct {
	Steps []Step `json:"steps"`
	// Children are the scripts of the subagents this script delegates to,
	// by the subagent call's description (ChildModel).
	Children map[string]Script `json:"children,omitempty"`
}

// ChildModeler is a model that chooses its subagents' model itself (the
// scripted model plays a child's script): ChildModel returns the model of
// the child a subagent call with this description starts.
type ChildModeler interface {
	ChildModel(description string) Model
}

// Step is one scripted assistant response.
type Step struct {
	// Reasoning is streamed first as a reasoning block (omitted when "").
	Reasoning string `json:"reasoning,omitempty"`
	// Text is streamed as a text block (omitted when "").
	Text string `json:"text,omitempty"`
	// Calls are streamed as tool-call blocks, in order.
	Calls []ScriptCall `json:"calls,omitempty"`
	// Finish is the finish reason; default "tool-calls" when the step has
	// calls, else "stop". "max-tokens" makes the loop drop the calls.
	Finish string `json:"finish,omitempty"`
	// Usage is reported before the finish; nil estimates it from the
	// request and the response (about four bytes per token).
	Usage *core.TokenUsage `json:"usage,omitempty"`
	// Fail makes the call fail with this failure: before any chunk when the
	// step has no content, else after the content deltas (a mid-stream
	// failure: no block-end, usage or finish is sent).
	Fail *core.LLMFailure `json:"fail,omitempty"`
}

// ScriptCall is one scripted tool call. Arguments is the raw string the
// model "produced" — invalid JSON included.
type ScriptCall struct {
	// ID is the call id; "" generates a unique one.
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ParseScript decodes a JSON script, refusing unknown fields.
func ParseScript(data []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("parse script: %w", err)
	}
	for i, st := range s.Steps {
		for j, c := range st.Calls {
			if c.Name == "" {
				return Script{}, fmt.Errorf("parse script: step %d call %d has no name", i, j)
			}
		}
	}
	return s, nil
}

// Pacing shapes how a scripted response streams. The zero value streams
// everything at once with no delay (what tests use).
type Pacing struct {
	// FirstChunk is the latency before the first chunk of each response.
	FirstChunk time.Duration
	// PerChunk is the delay between two chunks.
	PerChunk time.Duration
	// TextPiece is the target size in bytes of one text or reasoning delta
	// (cut after a space when possible, never inside a character); 0 sends
	// each block's text as one delta.
	TextPiece int
	// ArgsPiece is the size in bytes of one tool-call argument delta (never
	// inside a character); 0 sends the arguments as one delta.
	ArgsPiece int
}

// DemoPacing returns the realistic pacing of the built-in demo: a short
// first token latency and word-sized deltas.
func DemoPacing() Pacing {
	return Pacing{FirstChunk: 300 * time.Millisecond, PerChunk: 20 * time.Millisecond, TextPiece: 8, ArgsPiece: 24}
}

// ScriptedConfig configures a Scripted model.
type ScriptedConfig struct {
	Script Script
	Pacing Pacing
	// Provider and Model name the route in the log; defaults "scripted"
	// and "demo".
	Provider, Model string
}

// Scripted is the offline model: it plays a Script, one step per call, in
// order, streaming dsh chunks with the configured pacing and honouring
// cancellation. Once the script is exhausted it answers with a short text
// echoing the last user message, so a session stays usable. A Scripted
// model keeps its position: use one per session.
type Scripted struct {
	cfg ScriptedConfig

	mu     sync.Mutex
	next   int    // next step to play
	prefix string // call-id prefix of this instance
	calls  int    // generated call ids
}

// NewScripted returns a model playing cfg.Script.
func NewScripted(cfg ScriptedConfig) *Scripted {
	if cfg.Provider == "" {
		cfg.Provider = "scripted"
	}
	if cfg.Model == "" {
		cfg.Model = "demo"
	}
	return &Scripted{cfg: cfg, prefix: core.NewID()[:8]}
}

// Info implements Model.
func (m *Scripted) Info() Info {
	return Info{Provider: m.cfg.Provider, Model: m.cfg.Model}
}

// ChildModel implements ChildModeler: a fresh player, with this model's
// pacing and names, of the script's child for description (an empty
// script when it has none: the child echoes its prompt).
func (m *Scripted) ChildModel(description string) Model {
	return NewScripted(ScriptedConfig{Script: m.cfg.Script.Children[description], Pacing: m.cfg.Pacing,
		Provider: m.cfg.Provider, Model: m.cfg.Model})
}

// Remaining returns how many scripted steps are still to be played.
func (m *Scripted) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(0, len(m.cfg.Script.Steps)-m.next)
}

// Stream implements Model: it plays the next step.
func (m *Scripted) Stream(ctx context.Context, req Request) (Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Failure: FailureOf(err), Err: err}
	}
	m.mu.Lock()
	var st Step
	if m.next < len(m.cfg.Script.Steps) {
		st = m.cfg.Script.Steps[m.next]
	} else {
		st = exhaustedStep(req)
	}
	m.next++
	calls := make([]ScriptCall, len(st.Calls))
	for i, c := range st.Calls {
		if c.ID == "" {
			m.calls++
			c.ID = fmt.Sprintf("call_%s_%d", m.prefix, m.calls)
		}
		calls[i] = c
	}
	m.mu.Unlock()
	st.Calls = calls
	chunks, err := m.chunks(st, req)
	if err != nil {
		return nil, &Error{Failure: core.LLMFailure{Message: err.Error(), Code: CodeMalformed}, Err: err}
	}
	return &scriptedStream{ctx: ctx, pacing: m.cfg.Pacing, chunks: chunks, fail: st.Fail}, nil
}

// exhaustedStep is the answer after the last scripted step.
func exhaustedStep(req Request) Step {
	last := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == core.RoleUser && req.Messages[i].Source.Kind == core.SourceUser {
			last = joinText(req.Messages[i].Content)
			break
		}
	}
	text := "I'm the scripted demo model and my script is finished, so I can only echo you"
	if last != "" {
		text += ":\n\n> " + strings.ReplaceAll(last, "\n", "\n> ")
	} else {
		text += "."
	}
	text += "\n\nStart prism with an API key (`PRISM_API_KEY` or `DEEPSEEK_API_KEY`) to talk to a real model."
	return Step{Text: text}
}

// chunks builds the whole chunk sequence of one step.
func (m *Scripted) chunks(st Step, req Request) ([]core.StreamChunk, error) {
	var out, ends []core.StreamChunk
	idx := 0
	outBytes := 0
	addText := func(blockType, text string) error {
		if text == "" {
			return nil
		}
		i := idx
		idx++
		out = append(out, BlockStart(i, blockType))
		for _, piece := range splitText(text, m.cfg.Pacing.TextPiece) {
			if blockType == core.BlockReasoning {
				out = append(out, ReasoningDelta(i, piece))
			} else {
				out = append(out, TextDelta(i, piece))
			}
		}
		var b core.ContentBlock = &core.TextBlock{Text: text}
		if blockType == core.BlockReasoning {
			b = &core.ReasoningBlock{Text: text}
		}
		end, err := BlockEnd(i, b)
		ends = append(ends, end)
		outBytes += len(text)
		return err
	}
	if err := addText(core.BlockReasoning, st.Reasoning); err != nil {
		return nil, err
	}
	if err := addText(core.BlockText, st.Text); err != nil {
		return nil, err
	}
	for _, c := range st.Calls {
		i := idx
		idx++
		out = append(out, BlockStart(i, core.BlockToolCall))
		pieces := splitBytes(c.Arguments, m.cfg.Pacing.ArgsPiece)
		for _, piece := range pieces {
			out = append(out, ToolCallDelta(i, c.ID, c.Name, piece))
		}
		end, err := BlockEnd(i, &core.ToolCallBlock{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		if err != nil {
			return nil, err
		}
		ends = append(ends, end)
		outBytes += len(c.Name) + len(c.Arguments)
	}
	if st.Fail != nil {
		return out, nil // the stream fails after the content deltas
	}
	out = append(out, ends...)
	usage := st.Usage
	if usage == nil {
		usage = &core.TokenUsage{InputTokens: int64(requestBytes(req)/4 + 1), OutputTokens: int64(outBytes/4 + 1)}
	}
	out = append(out, UsageChunk(*usage))
	finish := st.Finish
	if finish == "" {
		finish = FinishStop
		if len(st.Calls) > 0 {
			finish = FinishToolCalls
		}
	}
	return append(out, FinishChunk(finish)), nil
}

func requestBytes(req Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			switch x := b.(type) {
			case *core.TextBlock:
				n += len(x.Text)
			case *core.ReasoningBlock:
				n += len(x.Text)
			case *core.ToolCallBlock:
				n += len(x.Name) + len(x.Arguments)
			case *core.ToolResultBlock:
				for _, c := range x.Content { // the length of joinText, without building it
					if t, ok := c.(*core.TextBlock); ok {
						n += len(t.Text)
					}
				}
			}
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// splitText cuts s into pieces of about n bytes, preferring to cut after a
// space and never inside a character.
func splitText(s string, n int) []string {
	if n <= 0 || len(s) <= n {
		return []string{s}
	}
	var out []string
	start := 0
	for i, r := range s {
		size := i - start
		if size >= n && (r == ' ' || r == '\n' || size >= 2*n) {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitBytes cuts s into pieces of n bytes, moving each cut back to a
// character boundary. "" gives one empty piece.
func splitBytes(s string, n int) []string {
	if n <= 0 || len(s) <= n {
		return []string{s}
	}
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// scriptedStream plays a prepared chunk list.
type scriptedStream struct {
	ctx    context.Context
	pacing Pacing
	chunks []core.StreamChunk
	fail   *core.LLMFailure
	sent   int
	closed bool
	timer  *time.Timer
}

// Recv implements Stream.
func (s *scriptedStream) Recv() (core.StreamChunk, error) {
	if s.closed {
		return core.StreamChunk{}, &Error{Failure: core.LLMFailure{Message: "stream closed", Code: CodeStreamClosed}}
	}
	if err := s.ctx.Err(); err != nil {
		return core.StreamChunk{}, &Error{Failure: FailureOf(err), Err: err}
	}
	if s.sent >= len(s.chunks) {
		if s.fail != nil {
			return core.StreamChunk{}, &Error{Failure: *s.fail}
		}
		return core.StreamChunk{}, io.EOF
	}
	delay := s.pacing.PerChunk
	if s.sent == 0 {
		delay = s.pacing.FirstChunk
	}
	if delay > 0 {
		if s.timer == nil {
			s.timer = time.NewTimer(delay)
		} else {
			s.timer.Reset(delay)
		}
		select {
		case <-s.ctx.Done():
			err := s.ctx.Err()
			return core.StreamChunk{}, &Error{Failure: FailureOf(err), Err: err}
		case <-s.timer.C:
		}
	}
	c := s.chunks[s.sent]
	s.sent++
	return c, nil
}

// Close implements Stream.
func (s *scriptedStream) Close() error {
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	return nil
}
