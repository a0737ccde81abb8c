package codex

import (
	"bufio"
	"slices"

	"prism/sources/dsh"
)

// tail is the Format's LineTail: the state of a read of one rollout kept
// between the chunks of lines a watcher feeds it. Logs equals ReadPath of
// the lines fed so far, by construction: both run the same rolloutReader,
// and Logs finishes a copy of its state.
type tail struct {
	path string
	rr   *rolloutReader
	err  error
}

// newTail returns the LineTail of the rollout at path.
func newTail(path string, lim dsh.Limits) dsh.LineTail {
	return &tail{path: path, rr: newRolloutReader(lim, IDFromFileName(path))}
}

func (t *tail) Feed(r *bufio.Reader) error {
	if t.err == nil {
		t.err = t.rr.feed(r)
	}
	return t.err
}

func (t *tail) Logs() ([]*dsh.Log, []int, error) {
	if t.err != nil {
		return nil, nil, t.err
	}
	rr := t.rr
	settled := 0
	if rr.d.seed == nil { // a fork's seed is emitted whole when it ends
		settled = len(rr.d.out.Events)
	}
	l := *rr.l
	l.Pos, l.Notes = slices.Clip(l.Pos), slices.Clip(l.Notes)
	ro, out, err := finish(rr.d.clone(), &l, rr.n)
	if err != nil {
		return nil, nil, err
	}
	return []*dsh.Log{atPath(ro, out, t.path)}, []int{settled}, nil
}

// clone returns a copy of d that can be finished (Finish) without
// changing d: the events it has emitted are shared (never rewritten), what
// Finish changes is copied — the open step is read, not changed, by
// writeStep.
func (d *Decoder) clone() *Decoder {
	c := *d
	c.out.Events = slices.Clip(d.out.Events)
	c.out.Malformed = slices.Clip(d.out.Malformed)
	if d.seed != nil {
		c.seed = d.seed.clone()
	}
	return &c
}

// Mem counts the events decoded and, for a fork whose seed has not
// ended, the seed's events its decoder holds until then.
func (t *tail) Mem() int64 { return t.rr.mem + t.rr.seedMem }
