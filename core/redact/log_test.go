package redact_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"prism/core"
)

// TestLogIncrementalEqualsWhole: a Log extended batch by batch — one
// event at a time, at every two-way split, and at random cuts, so batches
// end inside streams of chunks and between a .env read's call and its
// result — holds, after each batch, exactly Session's redaction of the
// log so far, and no secret.
func TestLogIncrementalEqualsWhole(t *testing.T) {
	r := newRedactor(t)
	h, events, secrets := secretSession(t)
	// A second turn that ends inside an open stream, with a secret split
	// across its chunks.
	l := &log{t: t, events: events}
	l.add(core.EventTurnStart, core.TurnStart{Turn: 2})
	l.chunk(core.ChunkTextDelta, "the key is "+githubPAT[:12])
	l.chunk(core.ChunkTextDelta, githubPAT[12:])
	events = l.events
	whole := func(n int) []core.Event {
		_, out, _ := r.Session(h, events[:n])
		return out
	}
	check := func(name string, cuts []int) {
		t.Helper()
		lg := r.Log(h)
		if wantH, _, _ := r.Session(h, nil); !cmp.Equal(lg.Header(), wantH) {
			t.Errorf("%s: header = %+v, want %+v", name, lg.Header(), wantH)
		}
		prev, at := []core.Event(nil), 0
		for _, cut := range append(cuts, len(events)) {
			before := slicesData(prev)
			got, from := lg.Extend(events[at:cut])
			at = cut
			want := whole(cut)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s: after events [0, %d) the incremental log differs from the whole log's redaction (-whole +incremental):\n%s", name, cut, diff)
			}
			if from > len(prev) || !cmp.Equal(got[:from], prev[:from], cmpopts.EquateEmpty()) {
				t.Fatalf("%s: Extend says the log changed from %d, but events before it changed (or from is past the old end %d)", name, from, len(prev))
			}
			if slicesData(prev) != before {
				t.Fatalf("%s: Extend wrote into a slice it returned before", name)
			}
			prev = got
		}
		for _, e := range prev {
			for _, s := range secrets {
				if strings.Contains(string(e.Data), s) {
					t.Fatalf("%s: event %d shows secret %q", name, e.Seq, s)
				}
			}
		}
	}
	var ones []int
	for i := 1; i < len(events); i++ {
		ones = append(ones, i)
	}
	check("one event at a time", ones)
	for i := 0; i <= len(events); i++ {
		check("split", []int{i})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		var cuts []int
		for i := 1; i < len(events); i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		check("random cuts", cuts)
	}
}

// slicesData is the bytes of events' data, joined: what a reader of an
// earlier result would see.
func slicesData(events []core.Event) string {
	var b strings.Builder
	for _, e := range events {
		b.Write(e.Data)
		b.WriteByte(0)
	}
	return b.String()
}
