package agent

import (
	"strings"

	"prism/core"
)

// chunkWriter appends a stream's chunks as assistant/chunk events,
// coalescing consecutive deltas of one block — text, reasoning, or one
// tool call's arguments — into one event, so a token stream is not a store
// write per token. A pending delta is appended when the next chunk cannot
// merge with it, when it reaches ChunkBytes, when it is ChunkInterval old
// (the caller's timer), and when the stream ends. Chunks are never
// reordered, and the merged deltas concatenate to exactly the originals.
type chunkWriter struct {
	t       *turn
	res     *streamResult
	pending *core.StreamChunk
	buf     strings.Builder // the pending delta's text or arguments
}

// add takes the next chunk. started reports that a new pending delta
// began (the caller arms its flush timer).
func (w *chunkWriter) add(c core.StreamChunk) (started bool, err error) {
	limit := w.t.a.cfg.ChunkBytes
	if w.pending != nil && mergeable(w.pending, &c) {
		w.buf.WriteString(deltaText(&c))
		if c.Name != "" && w.pending.Name == "" {
			w.pending.Name = c.Name
		}
		if w.buf.Len() >= limit {
			return false, w.flush()
		}
		return false, nil
	}
	if err := w.flush(); err != nil {
		return false, err
	}
	if limit < 0 || !isDelta(&c) || len(deltaText(&c)) >= limit {
		return false, w.write(c)
	}
	p := c
	w.pending = &p
	w.buf.Reset()
	w.buf.WriteString(deltaText(&c))
	return true, nil
}

// flush appends the pending delta, if any.
func (w *chunkWriter) flush() error {
	if w.pending == nil {
		return nil
	}
	c := *w.pending
	w.pending = nil
	s := w.buf.String()
	if c.Type == core.ChunkToolCallDelta {
		c.ArgumentsDelta = &s
	} else {
		c.Text = &s
	}
	return w.write(c)
}

func (w *chunkWriter) write(c core.StreamChunk) error {
	e, err := w.t.append(core.EventAssistantChunk, core.AssistantChunk{Turn: w.t.n, Step: w.t.step, Chunk: c}, core.AppendOptions{})
	if err != nil {
		return err
	}
	w.res.chunkSeqs = append(w.res.chunkSeqs, e.Seq)
	return nil
}

func isDelta(c *core.StreamChunk) bool {
	if c.Index == nil {
		return false
	}
	switch c.Type {
	case core.ChunkTextDelta, core.ChunkReasoningDelta:
		return c.Text != nil
	case core.ChunkToolCallDelta:
		return c.ArgumentsDelta != nil
	}
	return false
}

func deltaText(c *core.StreamChunk) string {
	switch {
	case c.Type == core.ChunkToolCallDelta && c.ArgumentsDelta != nil:
		return *c.ArgumentsDelta
	case c.Text != nil:
		return *c.Text
	}
	return ""
}

// mergeable reports whether c continues the pending delta p: the same kind
// of delta for the same block (and, for a tool call, the same id and a
// compatible name).
func mergeable(p, c *core.StreamChunk) bool {
	if !isDelta(c) || p.Type != c.Type || *p.Index != *c.Index {
		return false
	}
	if c.Type == core.ChunkToolCallDelta {
		return p.ID == c.ID && (c.Name == "" || p.Name == "" || c.Name == p.Name)
	}
	return true
}
