package watch_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/sources/dsh"
	"prism/sources/watch"
	"prism/store/storetest"
)

// TestWatchDshLogRewrittenAndGrown: a plain dsh log rewritten in place
// (same inode: one line's text changed, the same length) and grown by
// the lines after it is read whole, not read on from where the last
// read ended (the changed line's stale events would stay).
func TestWatchDshLogRewrittenAndGrown(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(fixtures, "basic/session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	st := newTestStore(t)
	root := t.TempDir()
	path := filepath.Join(root, "_no-cwd", basicID, "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	half := bytes.IndexByte(data[len(data)/2:], '\n') + len(data)/2 + 1
	if err := os.WriteFile(path, data[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	w := newQuietWatcher(t, st, root)
	scanOK(t, w)
	changed := bytes.Replace(data, []byte("Count the lines"), []byte("COUNT THE LINES"), 1)
	if bytes.Equal(changed, data) {
		t.Fatal("the fixture has no prompt to change")
	}
	ino := inode(t, path)
	if err := os.WriteFile(path, changed, 0o644); err != nil { // truncates: the same inode
		t.Fatal(err)
	}
	if inode(t, path) != ino {
		t.Fatal("the rewrite made a new file")
	}
	scanOK(t, w)
	logs, _, err := dsh.ReadFile(path, dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.LoadSession(ctx, basicID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(storetest.EventJSON(logs[0].Events), storetest.EventJSON(l.Events)); diff != "" {
		t.Errorf("a dsh log rewritten in place and grown kept stale events (-file +stored):\n%s", diff)
	}
}

// TestWatchDshLogReadOn: a dsh log (zstd frames, and plain lines) that
// only grows is read on from where the last read ended, frame by frame —
// the sum of what was read checks out — never read whole again.
func TestWatchDshLogReadOn(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"session.jsonl.zstd", "session.jsonl"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtures, "basic", name))
			if err != nil {
				t.Fatal(err)
			}
			var parts [][]byte
			if name == "session.jsonl" {
				parts = bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
				parts[len(parts)-1] = append(parts[len(parts)-1], '\n')
			} else {
				frames, _, err := dsh.ScanFrames(data)
				if err != nil {
					t.Fatal(err)
				}
				for _, fr := range frames {
					parts = append(parts, data[fr.Start:fr.End])
				}
			}
			st := newTestStore(t)
			root := t.TempDir()
			path := filepath.Join(root, "_no-cwd", basicID, name)
			var outcomes []string
			w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) {
				if s.Err != nil {
					t.Errorf("sync: %v", s.Err)
				}
				outcomes = append(outcomes, s.Outcome)
			}})
			appendFile(t, path, string(bytes.Join(parts[:2], nil)))
			if err := w.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			for _, p := range parts[2:] {
				appendFile(t, path, string(p))
				if err := w.Scan(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if len(outcomes) != len(parts)-1 || outcomes[0] != "created" {
				t.Fatalf("outcomes %v, want created then appended %d times", outcomes, len(parts)-2)
			}
			for i, o := range outcomes[1:] {
				if o != "appended" {
					t.Errorf("growth %d: outcome %s, want appended (read on, not whole)", i+1, o)
				}
			}
			logs, _, err := dsh.ReadFile(path, dsh.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			l, err := st.LoadSession(ctx, basicID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(storetest.EventJSON(logs[0].Events), storetest.EventJSON(l.Events)); diff != "" {
				t.Errorf("the grown log differs from the file (-file +stored):\n%s", diff)
			}
		})
	}
}
