package agent

import (
	"sync"

	"prism/core"
)

// Replayer answers a fork's tool calls with the source's recorded results
// while the fork asks for what the source asked for. The k-th call the fork
// makes is compared with the source's k-th call after the fork's boundary
// by core.CallKey (the tool's name and canonical arguments); while they are
// equal the recorded result is the answer, without running the tool. The
// first call that differs — or that the source never made, or made without
// a recorded result — and every call after it run for real. It is safe for
// concurrent use.
type Replayer struct {
	source string
	calls  []recordedCall

	mu       sync.Mutex
	next     int
	diverged bool
}

// recordedCall is one call of the source after the boundary.
type recordedCall struct {
	key    string
	seq    int64 // of its tool/call
	result *core.ToolResultData
}

// NewReplayer returns the replayer of a fork of source cut before event
// from: the source's calls from there on, in log order, with their
// results (the latest tool/result of each call id).
func NewReplayer(source string, events []core.Event, from int) *Replayer {
	r := &Replayer{source: source}
	if from < 0 {
		from = 0
	}
	index := map[string]int{}
	for i := from; i < len(events); i++ {
		e := &events[i]
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if e.DecodeData(&d) != nil {
				continue
			}
			index[d.CallID] = len(r.calls)
			r.calls = append(r.calls, recordedCall{key: core.CallKey(d.Name, d.Arguments), seq: e.Seq})
		case core.EventToolResult:
			var d core.ToolResultData
			if e.DecodeData(&d) != nil {
				continue
			}
			if k, ok := index[d.CallID()]; ok {
				r.calls[k].result = &d
			}
		}
	}
	return r
}

// Source returns the id of the session whose results are replayed.
func (r *Replayer) Source() string { return r.source }

// Calls returns how many recorded calls the replayer holds.
func (r *Replayer) Calls() int { return len(r.calls) }

// Next takes the fork's next call: when it matches the source's call at
// the same position it returns that call's recorded result and the seq of
// the source's tool/call; ok is false once the fork has diverged.
func (r *Replayer) Next(name, rawArguments string) (res core.Result, sourceSeq int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.diverged || r.next >= len(r.calls) {
		r.diverged = true
		return nil, 0, false
	}
	c := r.calls[r.next]
	r.next++
	if c.result == nil || c.key != core.CallKey(name, rawArguments) {
		r.diverged = true
		return nil, 0, false
	}
	return recordedResult(c.result), c.seq, true
}

// recordedResult rebuilds the result a tool/result recorded: its content,
// error flag, coded error and presentation meta, as the log holds them.
func recordedResult(d *core.ToolResultData) core.Result {
	p := d.Projection()
	if p.IsError {
		return &core.Failure{Error: core.ToolFailure{Info: d.Error}, Content: p.Content, Meta: p.Meta}
	}
	return &core.Success{Content: p.Content, Meta: p.Meta}
}
