package pgstore

import (
	"context"
	"slices"
	"sync"
	"testing"

	"prism/core"
	"prism/store"
	"prism/store/storetest"
)

// TestCommitLocalOnOneNode: on two nodes appending turns to one session in
// turn, each event is delivered Local by exactly one node — the one that
// committed it — and not Local by the other, so what follows Local commits
// (the OTLP push of a turn) happens once.
func TestCommitLocalOnOneNode(t *testing.T) {
	ctx := context.Background()
	type rec struct {
		mu    sync.Mutex
		local map[int64]bool
	}
	ra, rb := &rec{local: map[int64]bool{}}, &rec{local: map[int64]bool{}}
	fa, fb := newFeed(t), newFeed(t)
	hook := func(f *feed, r *rec) func(store.Commit) {
		return func(c store.Commit) {
			if c.Local {
				r.mu.Lock()
				for _, e := range c.Events {
					r.local[e.Seq] = true
				}
				r.mu.Unlock()
			}
			f.committed(c)
		}
	}
	a, url := newTestStore(t, Options{Committed: hook(fa, ra), Name: "A"})
	b := openAt(t, url, Options{Committed: hook(fb, rb), Name: "B"})
	storetest.MustCreate(t, a, "s")
	const turns = 6
	mine := map[int64]string{}
	for i := range turns {
		node, name := a, "A"
		if i%2 == 1 {
			node, name = b, "B"
		}
		evs := storetest.TurnEvents(int64(8*i), i+1, false)
		if err := node.AppendEvents(ctx, "s", evs); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			mine[e.Seq] = name
		}
	}
	fa.waitFor(t, "s", 8*turns)
	fb.waitFor(t, "s", 8*turns)
	ra.mu.Lock()
	rb.mu.Lock()
	defer ra.mu.Unlock()
	defer rb.mu.Unlock()
	for seq, who := range mine {
		if ra.local[seq] == rb.local[seq] {
			t.Errorf("seq %d: Local on A %v, on B %v; want exactly one", seq, ra.local[seq], rb.local[seq])
		}
		if (who == "A") != ra.local[seq] {
			t.Errorf("seq %d was committed by %s, but A delivered it Local=%v", seq, who, ra.local[seq])
		}
	}
}

// TestFanoutKeepsLocalThroughCatchUp: a node's own commit that a read of
// the table delivers — its own NOTIFY heard before the writer handed the
// commit over — still goes out Local, in a commit apart from another
// node's events, and the hand-over that follows delivers nothing twice.
func TestFanoutKeepsLocalThroughCatchUp(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	storetest.MustCreate(t, st, "s")
	first := storetest.TurnEvents(0, 1, false) // "another node's"
	second := storetest.TurnEvents(8, 2, false)
	if err := st.AppendEvents(ctx, "s", first); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "s", second); err != nil {
		t.Fatal(err)
	}
	var got []store.Commit
	f := &fanout{st: &Store{opts: Options{Committed: func(c store.Commit) { got = append(got, c) }}, log: quietLogger(), pool: st.pool},
		seen: map[string]cursor{"s": {seq: -1}}, gone: map[string]bool{}}
	mine := []change{{Commit: store.Commit{SessionID: "s", Events: second, Local: true}, lastSeq: 15}}
	f.claim(mine) // before the commit
	f.process(ctx, []hint{{id: "s", seq: 15}})
	f.process(ctx, []hint{{id: "s", seq: 15, local: &mine[0]}})
	var localSeqs, otherSeqs []int64
	for _, c := range got {
		for _, e := range c.Events {
			if c.Local {
				localSeqs = append(localSeqs, e.Seq)
			} else {
				otherSeqs = append(otherSeqs, e.Seq)
			}
		}
	}
	if want := seqs(second); !slices.Equal(localSeqs, want) {
		t.Errorf("Local seqs %v, want %v", localSeqs, want)
	}
	if want := seqs(first); !slices.Equal(otherSeqs, want) {
		t.Errorf("other seqs %v, want %v", otherSeqs, want)
	}
}

func seqs(evs []core.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}
