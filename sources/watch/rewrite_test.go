package watch_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"prism/sources/watch"
)

// quietWatcher is a Watcher of root into st whose failed syncs fail the
// test at the next scanOK.
type quietWatcher struct {
	*watch.Watcher
	failed []watch.Sync
}

func newQuietWatcher(t *testing.T, st watch.Store, root string) *quietWatcher {
	t.Helper()
	q := &quietWatcher{}
	q.Watcher = watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) {
		if s.Err != nil {
			q.failed = append(q.failed, s)
		}
	}})
	return q
}

// scanOK scans once; a failed sync fails the test.
func scanOK(t *testing.T, w *quietWatcher) {
	t.Helper()
	if err := w.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range w.failed {
		t.Fatalf("%s: %v", s.Path, s.Err)
	}
}

// inode is the inode of the file at path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestWatchRewrittenMiddleIsReadWhole rewrites a watched transcript in
// place (same inode, as an editor or a tool that truncates and writes it
// again does) with one changed line in its middle — far from its first
// bytes and from the end of what was read, the same length — and a grown
// tail: the watcher must not trust it as grown (the stale line's events
// would stay) but read it whole, so that the store equals a whole read.
func TestWatchRewrittenMiddleIsReadWhole(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines {
		for _, k := range growKinds {
			t.Run(e.name+"/"+k.name, func(t *testing.T) {
				st := e.open(t)
				root := t.TempDir()
				path := filepath.Join(root, k.rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				before := generated(k.line, 200)
				if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
					t.Fatal(err)
				}
				w := newQuietWatcher(t, st, root)
				scanOK(t, w)
				// The prompt of a turn in the middle, changed in place.
				mid := bytes.Index([]byte(before[len(before)/2:]), []byte("look at the build"))
				if mid < 0 {
					t.Fatal("no prompt in the middle of the transcript")
				}
				at := len(before)/2 + mid
				if at < 8<<10 || len(before)-at < 8<<10 {
					t.Fatalf("the changed line at %d of %d bytes is not in the middle", at, len(before))
				}
				after := before[:at] + "LOOK AT THE BUILD" + before[at+len("look at the build"):] + generated(k.line, 210)[len(before):]
				var ino1, ino2 uint64
				ino1 = inode(t, path)
				if err := os.WriteFile(path, []byte(after), 0o644); err != nil { // truncates: the same inode
					t.Fatal(err)
				}
				if ino2 = inode(t, path); ino1 != ino2 {
					t.Fatalf("the rewrite made a new file (inode %d, was %d)", ino2, ino1)
				}
				scanOK(t, w)
				logs := wholeRead(t, path)
				if len(logs) != 1 {
					t.Fatalf("a whole read: %d sessions", len(logs))
				}
				stored, err := st.LoadSession(ctx, logs[0].Header.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := eventsJSON(t, stored.Events), eventsJSON(t, logs[0].Events); !reflect.DeepEqual(got, want) {
					t.Fatalf("after a rewrite in place the store kept stale events: %d stored, a whole read %d; first difference:\n%s", len(got), len(want), firstDiff(got, want))
				}
				// Reading on from the whole read still follows growth.
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(generated(k.line, 220)[len(generated(k.line, 210)):]); err != nil {
					t.Fatal(err)
				}
				f.Close()
				scanOK(t, w)
				logs = wholeRead(t, path)
				if stored, err = st.LoadSession(ctx, logs[0].Header.ID); err != nil {
					t.Fatal(err)
				}
				if got, want := eventsJSON(t, stored.Events), eventsJSON(t, logs[0].Events); !reflect.DeepEqual(got, want) {
					t.Fatalf("grown after the rewrite: first difference:\n%s", firstDiff(got, want))
				}
				// Rewritten in place again, not grown: the same length.
				f, err = os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte("LOOK AT THE BUILD"), int64(at-len(before)/4)); err != nil {
					t.Fatal(err)
				}
				f.Close()
				scanOK(t, w)
				if stored, err = st.LoadSession(ctx, logs[0].Header.ID); err != nil {
					t.Fatal(err)
				}
				logs = wholeRead(t, path)
				if got, want := eventsJSON(t, stored.Events), eventsJSON(t, logs[0].Events); !reflect.DeepEqual(got, want) {
					t.Fatalf("rewritten in place without growing: first difference:\n%s", firstDiff(got, want))
				}
			})
		}
	}
}
