package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/db"
	"prism/sources/dsh"
	"prism/sources/watch"
)

// TestWatchBudgetCountsSidechainLines: two Claude Code transcripts made
// mostly of inline sidechain lines, whose kept decoder states hold each
// such line twice (the main log's raw event, and the line kept raw for
// its child session), with a budget of three times one file's sidechain
// bytes: both states together exceed it, so the least recently grown is
// dropped and read whole when it grows again (4 whole reconciliations,
// not 2).
func TestWatchBudgetCountsSidechainLines(t *testing.T) {
	ctx := context.Background()
	var b strings.Builder
	side := 0
	for i := range 80 {
		line := ccLine(i)
		if i >= 8 {
			line = strings.Replace(line, `"isSidechain":false`, `"isSidechain":true,"agentId":"s1"`, 1)
			side += len(line) + 1
		}
		b.WriteString(line + "\n")
	}
	text := b.String()
	root := t.TempDir()
	st := &countingStore{watchStore: newTestStore(t, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: 3 * int64(side)} })}
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) {
		if s.Err != nil {
			t.Errorf("sync: %v", s.Err)
		}
	}})
	paths := []string{filepath.Join(root, "-p", "a.jsonl"), filepath.Join(root, "-p", "b.jsonl")}
	if err := os.MkdirAll(filepath.Dir(paths[0]), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, benchCCID, filepath.Base(p))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		appendFile(t, p, strings.ReplaceAll(ccLine(80), benchCCID, filepath.Base(p))+"\n")
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st.syncs != 4 {
		t.Errorf("%d whole reconciliations, want 4: both kept states exceed the budget together (%d appends)", st.syncs, st.appends)
	}
}
