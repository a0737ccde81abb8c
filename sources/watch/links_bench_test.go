package watch_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"prism/db"
	"prism/sources/dsh"
	"prism/sources/watch"
)

// BenchmarkWatchPendingLink times a quiet poll (no file changed) of a
// folder holding a long Claude Code session (n calls) and a subagent
// whose spawning call is not stored (the parent's transcript has only the
// result naming it): what a child's link waiting for its call costs per
// poll, 5 polls a second.
func BenchmarkWatchPendingLink(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 5000} {
		b.Run(map[int]string{1000: "calls=1000", 5000: "calls=5000"}[n], func(b *testing.B) {
			const sid = "5b0e3c1a-0000-4000-8000-0000000000e9"
			c := claudeLines{sid: sid}
			root := b.TempDir()
			var parent strings.Builder
			parent.WriteString(c.prompt("Investigate"))
			for i := range n {
				parent.WriteString(c.call(100 + i))
				parent.WriteString(c.result(100 + i))
			}
			parent.WriteString(c.agentResult(52, "b1", "completed"))
			appendFile(b, filepath.Join(root, "-home-dev-app", sid+".jsonl"), parent.String())
			appendFile(b, filepath.Join(root, "-home-dev-app", sid, "subagents", "agent-b1.jsonl"), c.childLines("b1", "Count the files"))
			st := newTestStore(b, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: 1 << 30} })
			w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
			if err := w.Scan(ctx); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := w.Scan(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
