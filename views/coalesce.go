package views

import "prism/core"

// Coalescer applies events to a Timeline and decides which updates to
// render: the one coalescing rule of the live path. The updates of
// streamed assistant chunks are held and merged (Update.Merge) into one, so
// a burst of deltas becomes one patch of the streamed message; any other
// event first releases what is held, then its own update, so patches keep
// log order. Flush releases the held update when the caller's coalescing
// window closes, or at the end of a range.
//
// The zero Coalescer is ready. It is not safe for concurrent use.
type Coalescer struct {
	// Off emits every update as it comes (no chunk is held): frames then
	// depend on the events alone, not on their timing.
	Off  bool
	held *Update
}

// Apply applies e to t and passes the updates that are ready, in order, to
// emit (none, one, or the released one and e's). It stops at emit's first
// error.
func (c *Coalescer) Apply(t *Timeline, e *core.Event, emit func(Update) error) error {
	u := t.Apply(e)
	if e.Type == core.EventAssistantChunk && !c.Off {
		if c.held == nil {
			c.held = &u
		} else {
			c.held.Merge(u)
		}
		return nil
	}
	if err := c.Flush(emit); err != nil {
		return err
	}
	return emit(u)
}

// Flush passes the held update, if any, to emit.
func (c *Coalescer) Flush(emit func(Update) error) error {
	if c.held == nil {
		return nil
	}
	u := *c.held
	c.held = nil
	return emit(u)
}

// Holding reports whether an update is held.
func (c *Coalescer) Holding() bool { return c.held != nil }

// Reset drops the held update (the timeline it came from was replaced).
func (c *Coalescer) Reset() { c.held = nil }
