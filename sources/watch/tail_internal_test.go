package watch

import (
	"bufio"
	"bytes"
	"hash/crc32"
	"os"
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

// BenchmarkTrustedPrefix times foreignTail.trusted on a 16 MiB
// transcript: what the check that a grown transcript was not rewritten
// adds to a poll (it reads and sums every byte read before), in MB/s.
func BenchmarkTrustedPrefix(b *testing.B) {
	const size = 16 << 20
	text := bytes.Repeat([]byte(`{"type":"user","message":{"content":"a line of a transcript"}}`+"\n"), size/64)
	path := b.TempDir() + "/t.jsonl"
	if err := os.WriteFile(path, text, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	t := &foreignTail{prefixSum: prefixSum{end: int64(len(text)), sum: crc32.Update(0, castagnoli, text)}}
	buf := make([]byte, sumBufBytes)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if !t.trusted(f, t.end, buf) {
			b.Fatal("the unchanged file is not trusted")
		}
	}
}
