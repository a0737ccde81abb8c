package agent

import (
	"context"
	"fmt"

	"prism/core"
)

// groupOutcome is the outcome of one scheduler group.
type groupOutcome struct {
	consumed  int
	aborted   bool
	concluded bool
	err       error
}

// runTools schedules one step's tool calls in model order (dsh's
// executeToolCalls): an exclusive call is a group of its own and a
// barrier; a parallel call opens a rolling pool over the remaining calls.
// It returns whether a committed result concluded the turn and whether the
// turn was aborted; err is an internal (log) failure.
func (t *turn) runTools(calls []*core.ToolCallBlock) (concluded, aborted bool, err error) {
	next := 0
	for next < len(calls) {
		first := calls[next]
		mode := t.a.cfg.Tools.ExecutionMode(first.Name, core.ParseArguments(first.Arguments))
		group := calls[next : next+1]
		if mode == core.Parallel {
			group = calls[next:]
		}
		out := t.runGroup(group, mode)
		next += out.consumed
		concluded = concluded || out.concluded
		if out.err != nil {
			return concluded, false, out.err
		}
		if out.aborted {
			for _, c := range calls[next:] {
				if err := t.appendSkipped(c); err != nil {
					return concluded, true, err
				}
			}
			return concluded, true, nil
		}
	}
	return concluded, false, nil
}

// slot is one call of a group.
type slot struct {
	pending *core.Pending
	result  core.Result // instead of pending: a logged call the turn's cancellation kept from starting
	callSeq int64
	ready   bool  // prepared to a final or post result, dispatched, or cancelled
	err     error // its tool/call never became durable: the body did not run
	// replayed: result is the source's recorded one (Config.Replay), from
	// the source's tool/call sourceSeq.
	replayed  bool
	sourceSeq int64
}

// runGroup runs one exclusive barrier or one parallel pool (dsh's
// runGroup). The calls a fill of the pool starts get their tool/call
// events in one AppendMany, then are prepared (pre-execute, approval,
// guards) one after another in model order; only dispatch overlaps, in at
// most MaxParallel goroutines. Before any body runs its tool/call is
// durable: the fill ends with one Sync that commits the calls together, and
// each dispatch goroutine waits for its call's commit (a group of one call
// runs its body on the loop's goroutine after that Sync instead). A later call is
// reclassified before it starts: if it is no longer parallel the pool stops
// there and the call becomes the next group. Results commit in model order:
// post-execute, then tool/result citing the call's seq, then the result's
// contexts, then concludesTurn. On cancellation no call starts any more;
// started calls drain and commit; logged calls not yet prepared get
// ABORTED_BEFORE_DISPATCH results; and every unstarted call of the group
// gets a synthetic tool/call + ABORTED_BEFORE_DISPATCH pair. On an internal
// failure no call starts any more and in-flight dispatches are awaited.
func (t *turn) runGroup(group []*core.ToolCallBlock, mode core.Mode) groupOutcome {
	reg := t.a.cfg.Tools
	sess := t.a.sess
	slots := make([]slot, len(group))
	done := make(chan int, len(group))
	var out groupOutcome
	nextToStart, committed, inFlight := 0, 0, 0
	aborted := t.ctx.Err() != nil
	// A group of one call (every step that asks for a single tool) runs
	// its body on the loop's goroutine, right after the fill's Sync made
	// its tool/call durable: a dispatch goroutine would cost the step two
	// hand-offs (the commit waking it, its result waking the loop) while
	// the loop only waits for it.
	lone := len(group) == 1
	inline := -1 // the slot whose body runs after the fill's Sync

	commitReady := func() error {
		for committed < len(group) && slots[committed].ready {
			s := &slots[committed]
			r := s.result
			if r == nil {
				r = s.pending.Complete(t.ctx)
			}
			seq, err := t.appendResult(group[committed], r, s.callSeq)
			if err != nil {
				return err
			}
			if s.replayed && t.a.cfg.OnReplayed != nil {
				t.a.cfg.OnReplayed(Replayed{
					CallID: group[committed].ID, CallSeq: s.callSeq, ResultSeq: seq,
					Source: t.a.cfg.Replay.Source(), SourceSeq: s.sourceSeq,
				})
			}
			t.a.pending = append(t.a.pending, r.Contexts()...)
			if sr, ok := r.(*core.Success); ok && sr.ConcludesTurn {
				out.concluded = true
			}
			committed++
		}
		return nil
	}
	// startBatch logs the tool/calls of the calls that can start now (the
	// free pool slots, up to a reclassified call) and prepares them in
	// order. It reports whether a body waits for the calls' commit.
	startBatch := func() (dispatched bool, err error) {
		end := nextToStart
		for end < len(group) && end-nextToStart < t.a.cfg.MaxParallel-inFlight {
			b := group[end]
			if end > 0 && mode == core.Parallel &&
				reg.ExecutionMode(b.Name, core.ParseArguments(b.Arguments)) != core.Parallel {
				break
			}
			end++
		}
		if end == nextToStart {
			return false, nil
		}
		drafts := make([]core.Draft, end-nextToStart)
		for k, b := range group[nextToStart:end] {
			drafts[k] = core.Draft{Type: core.EventToolCall, Data: t.toolCall(b)}
		}
		evs, err := sess.AppendMany(t.w, drafts...)
		if err != nil {
			return false, fmt.Errorf("append %s: %w", core.EventToolCall, err)
		}
		for k := nextToStart; k < end; k++ {
			s := &slots[k]
			s.callSeq = evs[k-nextToStart].Seq
			if aborted { // cancelled while an earlier call of the batch prepared
				s.result, s.ready = core.AbortedBeforeDispatch(), true
				continue
			}
			if rp := t.a.cfg.Replay; rp != nil {
				// A fork's call that repeats the source's: its recorded
				// result, without running the tool.
				if res, src, ok := rp.Next(group[k].Name, group[k].Arguments); ok {
					s.result, s.ready, s.replayed, s.sourceSeq = res, true, true, src
					continue
				}
			}
			p := reg.Prepare(t.ctx, t.call(group[k]))
			s.pending = p
			if !p.NeedsDispatch() {
				s.ready = true
			} else {
				inFlight++
				dispatched = true
				if lone {
					inline = k
					continue
				}
				go func() {
					defer func() { done <- k }()
					// No body runs before its tool/call is durable.
					if err := sess.WaitDurable(t.w, s.callSeq); err != nil {
						s.err = err
						return
					}
					p.Dispatch(t.ctx)
				}()
			}
			if t.ctx.Err() != nil { // cancellation may arrive during prepare
				aborted = true
			}
		}
		nextToStart = end
		return dispatched, commitReady()
	}
	fillPool := func() error {
		waiting := false
		for !aborted && nextToStart < len(group) && inFlight < t.a.cfg.MaxParallel {
			before := nextToStart
			dispatched, err := startBatch()
			waiting = waiting || dispatched
			if err != nil {
				return err
			}
			if nextToStart == before { // reclassified: the pool stops here
				break
			}
		}
		if !waiting {
			return nil
		}
		// The durability point of this fill's calls.
		err := sess.Sync(t.w)
		if k := inline; k >= 0 {
			inline = -1
			if err != nil {
				slots[k].err = err
			} else {
				slots[k].pending.Dispatch(t.ctx)
			}
			done <- k // buffered: settled by the loop below
		}
		return err
	}
	settle := func(i int) error {
		inFlight--
		slots[i].ready = true
		return slots[i].err
	}
	fail := func(err error) groupOutcome {
		for ; inFlight > 0; inFlight-- {
			<-done
		}
		out.err = err
		return out
	}

	if err := fillPool(); err != nil {
		return fail(err)
	}
	for inFlight > 0 {
		if err := settle(<-done); err != nil {
			return fail(err)
		}
		// Take every other call that finished meanwhile: their results and
		// the calls that replace them share one commit.
		for more := true; more && inFlight > 0; {
			select {
			case i := <-done:
				if err := settle(i); err != nil {
					return fail(err)
				}
			default:
				more = false
			}
		}
		if err := commitReady(); err != nil {
			return fail(err)
		}
		if t.ctx.Err() != nil {
			aborted = true
		}
		if err := fillPool(); err != nil {
			return fail(err)
		}
	}
	if aborted {
		if err := commitReady(); err != nil {
			out.err = err
			return out
		}
		for _, b := range group[nextToStart:] {
			if err := t.appendSkipped(b); err != nil {
				out.err = err
				return out
			}
		}
		out.consumed, out.aborted = len(group), true
		return out
	}
	if committed != nextToStart {
		out.err = fmt.Errorf("tool-call scheduler: %d calls started but %d committed", nextToStart, committed)
		return out
	}
	out.consumed = nextToStart
	return out
}

// call builds the pipeline input of one model call.
func (t *turn) call(b *core.ToolCallBlock) core.Call {
	h := t.a.sess.Header()
	sess := t.a.sess
	return core.Call{
		CallID:       b.ID,
		Name:         b.Name,
		RawArguments: b.Arguments,
		SessionID:    h.ID,
		Cwd:          h.Cwd,
		// Tool-owned events land between the call's tool/call and
		// tool/result; they are durable even if the turn is being cancelled.
		Emit: func(ctx context.Context, typ string, data any) error {
			_, err := sess.Append(context.WithoutCancel(ctx), typ, data, core.AppendOptions{})
			return err
		},
	}
}

// toolCall is the tool/call data of b.
func (t *turn) toolCall(b *core.ToolCallBlock) core.ToolCall {
	return core.ToolCall{Turn: t.n, Step: t.step, CallID: b.ID, Name: b.Name, Arguments: b.Arguments}
}

// appendCall appends a call's tool/call and returns its seq.
func (t *turn) appendCall(b *core.ToolCallBlock) (int64, error) {
	e, err := t.append(core.EventToolCall, t.toolCall(b), core.AppendOptions{})
	return e.Seq, err
}

// appendResult appends a call's tool/result citing its tool/call and
// returns its seq.
func (t *turn) appendResult(b *core.ToolCallBlock, r core.Result, callSeq int64) (int64, error) {
	p := r.Projection()
	data := core.ToolResultData{
		Turn:    t.n,
		Step:    t.step,
		Message: core.NewToolResultMessage(core.NewID(), b.ID, p.Content, p.IsError),
		Meta:    p.Meta,
	}
	if f, ok := r.(*core.Failure); ok {
		data.Error = f.Error.Info
	}
	e, err := t.append(core.EventToolResult, data, core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{callSeq}})
	return e.Seq, err
}

// appendSkipped records a call that never started because the turn was
// cancelled: a tool/call and a synthetic ABORTED_BEFORE_DISPATCH result,
// without the registry (no policy, no observers).
func (t *turn) appendSkipped(b *core.ToolCallBlock) error {
	seq, err := t.appendCall(b)
	if err != nil {
		return err
	}
	_, err = t.appendResult(b, core.AbortedBeforeDispatch(), seq)
	return err
}
