package watch

import (
	"bufio"
	"bytes"
	"testing"

	"prism/core"
	"prism/sources/dsh"
)

// emptyTail is a LineTail holding nothing (Mem 0).
type emptyTail struct{}

func (emptyTail) Feed(*bufio.Reader) error         { return nil }
func (emptyTail) Logs() ([]*dsh.Log, []int, error) { return nil, nil, nil }
func (emptyTail) Mem() int64                       { return 0 }

// TestKeepTailsCountsStoredTails: what the watcher keeps of each stored
// session beside a decoder state — the copy of the events the file's end
// closed for now — counts against the budget: two files whose copies
// together exceed it keep only the most recently grown one's.
func TestKeepTailsCountsStoredTails(t *testing.T) {
	events := make([]core.Event, 10)
	for i := range events {
		events[i] = core.Event{Seq: int64(i), Type: "assistant/message", Data: bytes.Repeat([]byte("x"), 1000)}
	}
	w := New(nil, t.TempDir(), Options{})
	kind := func(used uint64) *fileKind {
		ft := &foreignTail{lt: emptyTail{}, sessions: map[string]*sessionTail{}, used: used}
		ft.sessions["s"] = (*sessionTail)(nil).next(`{"id":"s"}`, events, 0, -1)
		return &fileKind{tail: ft}
	}
	a, b := kind(1), kind(2)
	w.kinds["a"], w.kinds["b"] = a, b
	one := b.tail.mem()
	if one < 10*1000 {
		t.Fatalf("a kept tail of 10 events of 1000 bytes counts %d bytes", one)
	}
	w.keepTails(b, dsh.Limits{MaxMemoryBytes: one * 3 / 2})
	if a.tail != nil || b.tail == nil {
		t.Errorf("kept a: %v, b: %v; want only b's (the most recently grown) within the budget", a.tail != nil, b.tail != nil)
	}
}
