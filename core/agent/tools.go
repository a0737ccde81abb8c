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
	callSeq int64
	ready   bool // prepared to a final or post result, or dispatched
}

// runGroup runs one exclusive barrier or one parallel pool (dsh's
// runGroup). Each call's tool/call is appended when the call starts; its
// prepare stage (pre-execute, approval, guards) runs before the next call
// starts, so prepares are in model order; only dispatch overlaps, in at
// most MaxParallel goroutines. A later call is reclassified before it
// starts: if it is no longer parallel the pool stops there and the call
// becomes the next group. Results commit in model order: post-execute,
// then tool/result citing the call's seq, then the result's contexts,
// then concludesTurn. On cancellation no call starts any more, started
// calls drain and commit, and every unstarted call of the group gets a
// synthetic tool/call + ABORTED_BEFORE_DISPATCH pair. On an internal
// failure no call starts any more and in-flight dispatches are awaited.
func (t *turn) runGroup(group []*core.ToolCallBlock, mode core.Mode) groupOutcome {
	reg := t.a.cfg.Tools
	slots := make([]slot, len(group))
	done := make(chan int, len(group))
	var out groupOutcome
	nextToStart, committed, started, inFlight := 0, 0, 0, 0
	aborted := t.ctx.Err() != nil

	commitReady := func() error {
		for committed < len(group) && slots[committed].ready {
			s := &slots[committed]
			r := s.pending.Complete(t.ctx)
			if err := t.appendResult(group[committed], r, s.callSeq); err != nil {
				return err
			}
			t.a.pending = append(t.a.pending, r.Contexts()...)
			if sr, ok := r.(*core.Success); ok && sr.ConcludesTurn {
				out.concluded = true
			}
			committed++
		}
		return nil
	}
	startCall := func(i int) error {
		b := group[i]
		seq, err := t.appendCall(b)
		if err != nil {
			return err
		}
		slots[i].callSeq = seq
		started++
		p := reg.Prepare(t.ctx, t.call(b))
		slots[i].pending = p
		if !p.NeedsDispatch() {
			slots[i].ready = true
			return nil
		}
		inFlight++
		go func() {
			defer func() { done <- i }()
			p.Dispatch(t.ctx)
		}()
		return nil
	}
	fillPool := func() error {
		for !aborted && nextToStart < len(group) && inFlight < t.a.cfg.MaxParallel {
			b := group[nextToStart]
			if nextToStart > 0 && mode == core.Parallel &&
				reg.ExecutionMode(b.Name, core.ParseArguments(b.Arguments)) != core.Parallel {
				break
			}
			if err := startCall(nextToStart); err != nil {
				return err
			}
			nextToStart++
			if err := commitReady(); err != nil {
				return err
			}
			if t.ctx.Err() != nil { // cancellation may arrive during prepare
				aborted = true
			}
		}
		return nil
	}
	fail := func(err error) groupOutcome {
		for ; inFlight > 0; inFlight-- {
			i := <-done
			slots[i].ready = true
		}
		out.err = err
		return out
	}

	if err := fillPool(); err != nil {
		return fail(err)
	}
	for inFlight > 0 {
		i := <-done
		inFlight--
		slots[i].ready = true
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
		for _, b := range group[started:] {
			if err := t.appendSkipped(b); err != nil {
				out.err = err
				return out
			}
		}
		out.consumed, out.aborted = len(group), true
		return out
	}
	if committed != started {
		out.err = fmt.Errorf("tool-call scheduler: %d calls started but %d committed", started, committed)
		return out
	}
	out.consumed = started
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

// appendCall appends a call's tool/call and returns its seq.
func (t *turn) appendCall(b *core.ToolCallBlock) (int64, error) {
	e, err := t.append(core.EventToolCall, core.ToolCall{Turn: t.n, Step: t.step, CallID: b.ID, Name: b.Name, Arguments: b.Arguments}, core.AppendOptions{})
	return e.Seq, err
}

// appendResult appends a call's tool/result citing its tool/call.
func (t *turn) appendResult(b *core.ToolCallBlock, r core.Result, callSeq int64) error {
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
	_, err := t.append(core.EventToolResult, data, core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{callSeq}})
	return err
}

// appendSkipped records a call that never started because the turn was
// cancelled: a tool/call and a synthetic ABORTED_BEFORE_DISPATCH result,
// without the registry (no policy, no observers).
func (t *turn) appendSkipped(b *core.ToolCallBlock) error {
	seq, err := t.appendCall(b)
	if err != nil {
		return err
	}
	return t.appendResult(b, core.AbortedBeforeDispatch(), seq)
}
