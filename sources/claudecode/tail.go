package claudecode

import (
	"bufio"
	"maps"
	"slices"

	"prism/sources/dsh"
)

// tail is the Format's LineTail: the state of a read of one transcript
// (a main one, or a subagent's agent-<id>.jsonl) kept between the chunks
// of lines a watcher feeds it. Logs equals ReadPath of the lines fed so
// far, by construction: both run the same logReader, and Logs finishes
// a copy of its state.
type tail struct {
	path  string
	agent string // the subagent's id, "" for a main transcript
	lr    *logReader
	// A main transcript's Task/Agent calls among its settled events
	// (noted up to seen), for its inline sidechains' links.
	calls []taskCall
	seen  int
	// callMem is about the bytes of calls (their ids and prompts).
	callMem int64
	err     error
}

// newTail returns the LineTail of the transcript at path.
func newTail(path string, lim dsh.Limits) dsh.LineTail {
	t := &tail{path: path, agent: AgentID(path)}
	if t.agent == "" {
		t.lr = newLogReader(lim, false, newSidechains())
	} else {
		t.lr = newLogReader(lim, true, nil)
	}
	return t
}

func (t *tail) Feed(r *bufio.Reader) error {
	if t.err == nil {
		t.err = t.lr.feed(r)
	}
	return t.err
}

func (t *tail) Logs() ([]*dsh.Log, []int, error) {
	if t.err != nil {
		return nil, nil, t.err
	}
	l, settled, err := t.lr.snapshot()
	if err != nil {
		return nil, nil, err
	}
	l.Source.File = t.path
	if t.agent != "" {
		asChild(l, t.path, t.agent)
		return []*dsh.Log{l}, []int{settled}, nil
	}
	logs, set := []*dsh.Log{l}, []int{settled}
	side := t.lr.side
	if len(side.groups) == 0 {
		return logs, set, nil // no inline sidechain (readMain's noteCalls would find nothing to link)
	}
	// The calls of the settled events are noted once; those of the rest
	// each time, on a copy.
	s := &sidechains{calls: t.calls}
	s.noteCalls(l.Events[t.seen:settled])
	for _, c := range s.calls[len(t.calls):] {
		t.callMem += int64(len(c.id)+len(c.prompt)) + lineOverhead
	}
	t.calls, t.seen = s.calls, settled
	view := *side
	view.calls = slices.Clip(t.calls)
	view.noteCalls(l.Events[settled:])
	for _, c := range view.logs(l.Header.ID, t.path) {
		logs, set = append(logs, c), append(set, 0)
	}
	return logs, set, nil
}

// clone returns a copy of d that can be finished (Flush) or fed without
// changing d: the events it has emitted are shared (never rewritten once
// timed), what Flush changes is copied.
func (d *Decoder) clone() *Decoder {
	c := *d
	c.events = slices.Clip(d.events)
	c.pending = maps.Clone(d.pending)
	c.pendingOrder = slices.Clip(d.pendingOrder)
	return &c
}

// Mem counts the events decoded and what a main transcript keeps for
// its inline sidechains: their lines, kept raw until read as child
// sessions, and the Task/Agent calls they are linked by.
func (t *tail) Mem() int64 {
	m := t.lr.mem + t.callMem
	if t.lr.side != nil {
		m += t.lr.side.mem
	}
	return m
}
