package model

import (
	"fmt"
	"strings"

	"prism/core"
)

// partial is one block under assembly.
type partial struct {
	blockType string
	text      strings.Builder // text, reasoning, or tool-call arguments
	callID    string
	name      string
	// block is set by block-end: authoritative, and it freezes the partial.
	block core.ContentBlock
}

// Assembler turns a chunk stream into content blocks and an assistant
// message, exactly as dsh's BlockAssembler: blocks appear in the order
// their index was first seen; text and reasoning deltas concatenate;
// tool-call argument deltas concatenate byte for byte; a block-end's block
// is authoritative (the first close wins, later deltas for a closed index
// are ignored); delta-only streams (no block-start/end) are tolerated.
//
// The zero value is ready to use. An Assembler is not safe for concurrent use.
type Assembler struct {
	partials map[int]*partial
	order    []int
	usage    *core.TokenUsage
	finish   string
	err      error
}

// Push feeds one chunk, in stream order. A malformed chunk (a block-end
// whose block does not decode, a delta without an index) is remembered and
// reported by Err; it never panics.
func (a *Assembler) Push(c core.StreamChunk) {
	switch c.Type {
	case core.ChunkBlockStart:
		if c.Index == nil {
			a.fail("block-start without index")
			return
		}
		if _, ok := a.partials[*c.Index]; !ok {
			a.ensure(*c.Index, c.BlockType)
		}
	case core.ChunkTextDelta, core.ChunkReasoningDelta:
		if c.Index == nil {
			a.fail(c.Type + " without index")
			return
		}
		typ := core.BlockText
		if c.Type == core.ChunkReasoningDelta {
			typ = core.BlockReasoning
		}
		p := a.ensure(*c.Index, typ)
		if p.block != nil || c.Text == nil {
			return // closed by block-end: ignore stragglers
		}
		p.text.WriteString(*c.Text)
	case core.ChunkToolCallDelta:
		if c.Index == nil {
			a.fail("tool-call-delta without index")
			return
		}
		p := a.ensure(*c.Index, core.BlockToolCall)
		if p.block != nil {
			return
		}
		p.callID = c.ID
		if c.Name != "" {
			p.name = c.Name
		}
		if c.ArgumentsDelta != nil {
			p.text.WriteString(*c.ArgumentsDelta)
		}
	case core.ChunkBlockEnd:
		if c.Index == nil {
			a.fail("block-end without index")
			return
		}
		b, err := core.DecodeBlock(c.Block)
		if err != nil {
			a.fail(fmt.Sprintf("block-end %d: %v", *c.Index, err))
			return
		}
		p := a.ensure(*c.Index, b.BlockType())
		if p.block == nil { // the first close wins
			p.block = b
		}
	case core.ChunkUsage:
		if c.Usage != nil {
			u := *c.Usage
			a.usage = &u
		}
	case core.ChunkFinish:
		a.finish = c.Reason
	default:
		// An unknown chunk type is carried in the log but does not assemble.
	}
}

func (a *Assembler) fail(msg string) {
	if a.err == nil {
		a.err = fmt.Errorf("malformed stream chunk: %s", msg)
	}
}

func (a *Assembler) ensure(index int, blockType string) *partial {
	if a.partials == nil {
		a.partials = map[int]*partial{}
	}
	p, ok := a.partials[index]
	if !ok {
		p = &partial{blockType: blockType}
		a.partials[index] = p
		a.order = append(a.order, index)
	}
	return p
}

// Err reports the first malformed chunk pushed, if any.
func (a *Assembler) Err() error { return a.err }

// Usage returns the usage chunk's counts, or nil when none arrived.
func (a *Assembler) Usage() *core.TokenUsage { return a.usage }

// Finish returns the finish reason; "stop" when the stream ended without one.
func (a *Assembler) Finish() string {
	if a.finish == "" {
		return FinishStop
	}
	return a.finish
}

func (a *Assembler) assemble(p *partial, index int) (core.ContentBlock, error) {
	if p.block != nil {
		return p.block, nil
	}
	switch p.blockType {
	case core.BlockText:
		return &core.TextBlock{Text: p.text.String()}, nil
	case core.BlockReasoning:
		return &core.ReasoningBlock{Text: p.text.String()}, nil
	case core.BlockToolCall:
		id := p.callID
		if id == "" {
			id = fmt.Sprintf("call-%d", index)
		}
		return &core.ToolCallBlock{ID: id, Name: p.name, Arguments: p.text.String()}, nil
	}
	return nil, fmt.Errorf("cannot assemble incomplete block of type %q", p.blockType)
}

// Blocks assembles every block seen so far, in stream order. After a
// max-tokens finish, tool-call blocks are dropped (truncated output cannot
// owe tool calls). An open block of an unknown type is an error.
func (a *Assembler) Blocks() (core.Content, error) {
	out := make(core.Content, 0, len(a.order))
	maxTokens := a.Finish() == FinishMaxTokens
	for _, i := range a.order {
		b, err := a.assemble(a.partials[i], i)
		if err != nil {
			return nil, err
		}
		if maxTokens && b.BlockType() == core.BlockToolCall {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// InterruptedBlocks assembles the prefix an interrupted stream can keep:
// text and reasoning blocks (closed or open) with non-blank text, in stream
// order. Tool calls are dropped whole — a kept call would demand a
// fabricated result.
func (a *Assembler) InterruptedBlocks() core.Content {
	var out core.Content
	for _, i := range a.order {
		p := a.partials[i]
		typ := p.blockType
		if p.block != nil {
			typ = p.block.BlockType()
		}
		if typ != core.BlockText && typ != core.BlockReasoning {
			continue
		}
		b, err := a.assemble(p, i)
		if err != nil {
			continue
		}
		var text string
		switch x := b.(type) {
		case *core.TextBlock:
			text = x.Text
		case *core.ReasoningBlock:
			text = x.Text
		default:
			continue
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, b)
		}
	}
	return out
}

// Message returns the assembled assistant message (Blocks) with a fresh id
// and the given source.
func (a *Assembler) Message(source core.Source) (core.Message, error) {
	blocks, err := a.Blocks()
	if err != nil {
		return core.Message{}, err
	}
	return core.Message{ID: core.NewID(), Role: core.RoleAssistant, Content: blocks, Source: source}, nil
}
