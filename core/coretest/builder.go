// Package coretest helps tests build session logs: a Builder that writes
// events in dsh's canonical order with the envelope a real append gives them.
// It is for tests and benchmarks only; production code never imports it
// (TestImportDirections holds that).
package coretest

import (
	"context"
	"encoding/json"
	"strconv"

	"prism/core"
)

// Builder writes session logs in dsh's canonical event order, for tests
// and benchmarks. Times advance by Step milliseconds per event.
type Builder struct {
	Events []core.Event
	// Time is the next event's time (epoch ms); Step is added after each.
	Time, Step int64
	turn, step int
	callSeq    map[string]int64
	msg        int
}

// NewBuilder returns a builder starting at time t0 (epoch ms).
func NewBuilder(t0 int64) *Builder { return &Builder{Time: t0, Step: 10, callSeq: map[string]int64{}} }

// Add appends an event of any type with data marshalled as JSON.
func (b *Builder) Add(typ string, data any, op *core.SurfaceOp) *core.Event {
	raw, err := core.MarshalNoEscape(data)
	if err != nil {
		panic(err)
	}
	return b.AddRaw(typ, raw, op)
}

// AddRaw appends an event with data as given.
func (b *Builder) AddRaw(typ string, data json.RawMessage, op *core.SurfaceOp) *core.Event {
	b.Events = append(b.Events, core.Event{Type: typ, Seq: int64(len(b.Events)), Time: b.Time, Data: data, SurfaceOp: op})
	b.Time += b.Step
	return &b.Events[len(b.Events)-1]
}

func (b *Builder) id() string {
	b.msg++
	return "m" + strconv.Itoa(b.msg)
}

// TurnStart opens the next turn.
func (b *Builder) TurnStart() *Builder {
	b.turn++
	b.step = 0
	b.Add(core.EventTurnStart, core.TurnStart{Turn: b.turn}, nil)
	return b
}

// TurnEnd closes the turn with reason kind.
func (b *Builder) TurnEnd(kind string) *Builder {
	b.Add(core.EventTurnEnd, core.TurnEnd{Turn: b.turn, Reason: core.TurnEndReason{Kind: kind}}, nil)
	return b
}

// StepStart opens the next step.
func (b *Builder) StepStart() *Builder {
	b.step++
	b.Add(core.EventStepStart, core.StepBoundary{Turn: b.turn, Step: b.step}, nil)
	return b
}

// StepEnd closes the step.
func (b *Builder) StepEnd() *Builder {
	b.Add(core.EventStepEnd, core.StepBoundary{Turn: b.turn, Step: b.step}, nil)
	return b
}

// User appends a user message.
func (b *Builder) User(text string) *Builder {
	b.Add(core.EventUserMessage, core.NewUserMessage(b.id(), text), core.AppendOp())
	return b
}

// Chunks streams text as assistant/chunk text deltas (one block).
func (b *Builder) Chunks(parts ...string) *Builder {
	zero := 0
	b.Add(core.EventAssistantChunk, core.AssistantChunk{Turn: b.turn, Step: b.step, Chunk: core.StreamChunk{Type: core.ChunkBlockStart, Index: &zero, BlockType: core.BlockText}}, nil)
	for _, p := range parts {
		p := p
		b.Add(core.EventAssistantChunk, core.AssistantChunk{Turn: b.turn, Step: b.step, Chunk: core.StreamChunk{Type: core.ChunkTextDelta, Index: &zero, Text: &p}}, nil)
	}
	return b
}

// Assistant appends the assistant message: text (may be empty) and the
// tool calls it requests as {id, name, arguments} triples.
func (b *Builder) Assistant(text string, calls ...[3]string) *Builder {
	var c core.Content
	if text != "" {
		c = append(c, &core.TextBlock{Text: text})
	}
	for _, k := range calls {
		c = append(c, &core.ToolCallBlock{ID: k[0], Name: k[1], Arguments: k[2]})
	}
	if c == nil {
		c = core.Content{}
	}
	m := core.Message{ID: b.id(), Role: core.RoleAssistant, Content: c, Source: core.Source{Kind: core.SourceModel, Provider: "scripted", Model: "scripted-1"}}
	b.Add(core.EventAssistantMessage, core.AssistantMessage{Turn: b.turn, Step: b.step, Message: m, Usage: &core.TokenUsage{InputTokens: 1200, OutputTokens: 85}}, core.AppendOp())
	return b
}

// Call appends tool/call.
func (b *Builder) Call(callID, name, args string) *Builder {
	e := b.Add(core.EventToolCall, core.ToolCall{Turn: b.turn, Step: b.step, CallID: callID, Name: name, Arguments: args}, nil)
	b.callSeq[callID] = e.Seq
	return b
}

// Result appends an append-origin tool/result. meta may be nil; errInfo
// (name, code) may be nil.
func (b *Builder) Result(callID string, text string, isError bool, meta any, errInfo *core.ErrorInfo) *Builder {
	d := core.ToolResultData{Turn: b.turn, Step: b.step, Message: core.NewToolResultMessage(b.id(), callID, core.Text(text), isError), Error: errInfo}
	if meta != nil {
		raw, err := core.MarshalNoEscape(meta)
		if err != nil {
			panic(err)
		}
		d.Meta = raw
	}
	e := b.Add(core.EventToolResult, d, core.AppendOp())
	if s, ok := b.callSeq[callID]; ok {
		e.SourceEventSeqs = []int64{s}
	}
	return b
}

// Repair appends dsh's crash-repair closers (core.InterruptedTurnClosers)
// for the log so far, as prism's import and startup repair do.
func (b *Builder) Repair() *Builder {
	for _, e := range core.InterruptedTurnClosers(b.Events) {
		b.Events = append(b.Events, e)
		b.Time = e.Time + b.Step
	}
	return b
}

// Exec runs one call through reg, with cwd as the calling session's
// working directory, and logs its tool/call and tool/result as the agent
// loop does: the real tool's content, isError, meta and error identity.
func (b *Builder) Exec(ctx context.Context, reg *core.Registry, cwd, callID, name, args string) *Builder {
	b.Call(callID, name, args)
	return b.Logged(callID, reg.Execute(ctx, core.Call{CallID: callID, Name: name, RawArguments: args, Cwd: cwd}))
}

// Logged appends the tool/result of call callID for the pipeline's result
// r, as the agent loop logs it.
func (b *Builder) Logged(callID string, r core.Result) *Builder {
	p := r.Projection()
	d := core.ToolResultData{Turn: b.turn, Step: b.step, Message: core.NewToolResultMessage(b.id(), callID, p.Content, p.IsError), Meta: p.Meta}
	if f, ok := r.(*core.Failure); ok {
		d.Error = f.Error.Info
	}
	e := b.Add(core.EventToolResult, d, core.AppendOp())
	if s, ok := b.callSeq[callID]; ok {
		e.SourceEventSeqs = []int64{s}
	}
	return b
}
