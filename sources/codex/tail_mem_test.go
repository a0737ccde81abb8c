package codex_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/sources/codex"
	"prism/sources/dsh"
)

// TestTailMemCountsAForksSeed: the kept state of a forked rollout read up
// to the middle of its inherited prefix holds the seed's events (its
// decoder's, until the seed ends): Mem counts them as it counts the same
// events read as the parent's own, so a watcher's budget of kept states
// sees them.
func TestTailMemCountsAForksSeed(t *testing.T) {
	parent, err := os.ReadFile(filepath.Join("testdata", "plain.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 15
	lim := dsh.Limits{MaxMemoryBytes: 1 << 30}
	fork := string(forkOf(t, parent, n))
	// The fork's first session_meta and the parent's n lines: the seed,
	// not ended yet.
	lines := strings.SplitAfter(fork, "\n")
	seedOnly := strings.Join(lines[:1+n], "")
	prefix := strings.Join(strings.SplitAfter(string(parent), "\n")[:n], "")
	mem := func(name, text string) int64 {
		tl := codex.Format().Tail(filepath.Join(t.TempDir(), name), lim)
		if err := tl.Feed(bufio.NewReader(strings.NewReader(text))); err != nil {
			t.Fatal(err)
		}
		return tl.Mem()
	}
	own := mem("rollout-2026-05-03T08-00-00-parent.jsonl", prefix)
	seed := mem("rollout-2026-05-03T08-00-00-"+forkID+".jsonl", seedOnly)
	if own == 0 || seed < own*9/10 {
		t.Errorf("Mem of a fork read within its seed = %d, of the same lines read as the parent's = %d: the seed's events are not counted", seed, own)
	}
	whole := mem("rollout-2026-05-03T08-00-00-"+forkID+".jsonl", fork)
	if whole < own {
		t.Errorf("Mem of the whole fork = %d, less than its seed's %d", whole, own)
	}
}
