package watch_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/db"
	"prism/sources/dsh"
	"prism/sources/watch"
	"prism/store"
	"prism/store/storetest"
)

// The SQLite store is one a watcher writes into.
var _ watch.Store = (*db.Store)(nil)

// fixtures holds dsh's session files (the repository's testdata/dsh).
const fixtures = "../../testdata/dsh"

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newTestStore opens a SQLite store in a fresh file under t.TempDir().
func newTestStore(t testing.TB, opts ...func(*db.Options)) *db.Store {
	t.Helper()
	o := db.Options{Logger: quietLogger()}
	for _, f := range opts {
		f(&o)
	}
	st, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "prism.db"), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// dshFile plays dsh's writer for one session file: it publishes the header
// frame and first batch by hard link, then appends frames.
type dshFile struct {
	t      testing.TB
	path   string
	frames [][]byte
	n      int // frames written
}

// basicID is the id of the session in testdata/dsh/basic.
const basicID = "0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f"

func newDshFile(t testing.TB, root, fixture string) *dshFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, fixture))
	if err != nil {
		t.Fatal(err)
	}
	frames, end, err := dsh.ScanFrames(data)
	if err != nil || end != len(data) {
		t.Fatalf("fixture frames: %v", err)
	}
	f := &dshFile{t: t, path: filepath.Join(root, "--home-alice-src-app--", basicID, "session.jsonl.zstd")}
	for _, fr := range frames {
		f.frames = append(f.frames, data[fr.Start:fr.End])
	}
	return f
}

func (f *dshFile) publish(frames int) {
	f.t.Helper()
	os.MkdirAll(filepath.Dir(f.path), 0o755)
	tmp := filepath.Join(filepath.Dir(f.path), ".session.tmp")
	if err := os.WriteFile(tmp, bytes.Join(f.frames[:frames], nil), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Link(tmp, f.path); err != nil {
		f.t.Fatal(err)
	}
	os.Remove(tmp)
	f.n = frames
}

func (f *dshFile) appendBytes(b []byte) {
	f.t.Helper()
	fh, err := os.OpenFile(f.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Write(b); err != nil {
		f.t.Fatal(err)
	}
}

func (f *dshFile) content() []byte { return bytes.Join(f.frames[:f.n], nil) }

func eventCount(t testing.TB, st *db.Store, id string) int64 {
	t.Helper()
	info, err := st.Session(context.Background(), id)
	if err != nil {
		return -1
	}
	return info.Events
}

func TestWatcher_tailsFramesAndSurvivesRewrites(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	root := t.TempDir()
	var syncs []watch.Sync
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) { syncs = append(syncs, s) }})
	f := newDshFile(t, root, "basic/session.jsonl.zstd")
	// Frame sizes (events per batch frame): 4, 25, 2, 3, 5.
	scan := func(want int64, step string) {
		t.Helper()
		if err := w.Scan(ctx); err != nil {
			t.Fatalf("%s: Scan: %v", step, err)
		}
		if got := eventCount(t, st, basicID); got != want {
			t.Fatalf("%s: %d events stored, want %d", step, got, want)
		}
	}
	scan(-1, "empty root")
	f.publish(2)
	scan(4, "published with one batch")
	if info, _ := st.Session(ctx, basicID); info.Status != core.StatusRunning || info.Source != store.SourceWatch {
		t.Errorf("watched session row %+v, want running and source watch", info)
	}
	half := f.frames[2][:len(f.frames[2])/2]
	f.appendBytes(half)
	scan(4, "a torn frame is not consumed")
	f.appendBytes(f.frames[2][len(half):])
	f.n = 3
	scan(29, "the frame completed")
	for f.n < len(f.frames) {
		f.appendBytes(f.frames[f.n])
		f.n++
	}
	scan(39, "the rest")
	scan(39, "no change, no duplicates")

	// Replaced by a new inode with the same content: reconciled, unchanged.
	os.Remove(f.path)
	f.publish(len(f.frames))
	scan(39, "replaced file")
	if last := syncs[len(syncs)-1]; last.Outcome != store.ImportUnchanged {
		t.Errorf("replaced identical file: outcome %s, want unchanged", last.Outcome)
	}

	// Shrunk (dsh's files only grow, but a restore could do this): the
	// watched session follows the file.
	if err := os.Truncate(f.path, int64(len(bytes.Join(f.frames[:3], nil)))); err != nil {
		t.Fatal(err)
	}
	f.n = 3
	scan(29, "shrunk file")
	if last := syncs[len(syncs)-1]; last.Outcome != store.ImportReplaced {
		t.Errorf("shrunk file: outcome %s, want replaced", last.Outcome)
	}
	for f.n < len(f.frames) {
		f.appendBytes(f.frames[f.n])
		f.n++
	}
	scan(39, "regrown")

	l, err := st.LoadSession(ctx, basicID)
	if err != nil {
		t.Fatal(err)
	}
	logs, _, _ := dsh.ReadFile(filepath.Join(fixtures, "basic/session.jsonl.zstd"), dsh.Limits{})
	if diff := cmp.Diff(storetest.EventJSON(logs[0].Events), storetest.EventJSON(l.Events)); diff != "" {
		t.Errorf("watched log differs from the file (-file +stored):\n%s", diff)
	}

	// A corrupt frame fails once and is not retried until the file changes.
	bad := bytes.Clone(f.frames[1])
	bad[len(bad)-2] ^= 0xFF
	f.appendBytes(bad)
	n := len(syncs)
	scan(39, "corrupt frame")
	if len(syncs) != n+1 || syncs[n].Outcome != "failed" || syncs[n].Err == nil {
		t.Fatalf("corrupt frame: syncs %+v, want one failure", syncs[n:])
	}
	scan(39, "corrupt frame, unchanged file")
	if len(syncs) != n+1 {
		t.Errorf("an unchanged failed file was retried")
	}
	// dsh's file was never written by the watcher.
	got, _ := os.ReadFile(f.path)
	if want := append(f.content(), bad...); !bytes.Equal(got, want) {
		t.Errorf("the dsh file changed under the watcher")
	}
}

func TestWatcher_plainJSONLLines(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	root := t.TempDir()
	w := watch.New(st, root, watch.Options{Logger: quietLogger()})
	data, _ := os.ReadFile(filepath.Join(fixtures, "basic/session.jsonl"))
	path := filepath.Join(root, "_no-cwd", basicID, "session.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	cut := bytes.Index(data, []byte("\n{\"type\":\"reasoning-chunks\"")) + 20 // mid-line
	os.WriteFile(path, data[:cut], 0o644)
	w.Scan(ctx)
	if got := eventCount(t, st, basicID); got != 5 {
		t.Fatalf("%d events after a partial line, want 5", got)
	}
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write(data[cut:])
	fh.Close()
	w.Scan(ctx)
	if got := eventCount(t, st, basicID); got != 39 {
		t.Fatalf("%d events after completion, want 39", got)
	}
}

func TestWatcher_runLatency(t *testing.T) {
	st := newTestStore(t)
	root := t.TempDir()
	synced := make(chan watch.Sync, 64)
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) {
		if s.Added > 0 {
			synced <- s
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	f := newDshFile(t, root, "basic/session.jsonl.zstd")
	wait := func(what string, start time.Time) {
		t.Helper()
		select {
		case s := <-synced:
			lat := time.Since(start)
			t.Logf("%s: %d events stored %v after dsh wrote them", what, s.Added, lat)
			if lat > time.Second {
				t.Errorf("%s: stored after %v, want within a second", what, lat)
			}
		case <-time.After(10 * time.Second): // a failure guard, not synchronisation
			t.Fatalf("%s: never stored", what)
		}
	}
	start := time.Now()
	f.publish(2)
	wait("new session", start)
	for i := 2; i < len(f.frames); i++ {
		start = time.Now()
		f.appendBytes(f.frames[i])
		wait("new frame", start)
	}
	if got := eventCount(t, st, basicID); got != 39 {
		t.Errorf("%d events, want 39", got)
	}
}

// TestWatcher_fileGrownPastTheLimit checks that a watched file that grows
// past the file limit is refused (reported, nothing more read) instead of
// being read whole into memory.
func TestWatcher_fileGrownPastTheLimit(t *testing.T) {
	ctx := context.Background()
	data, _ := os.ReadFile(filepath.Join(fixtures, "basic/session.jsonl"))
	st := newTestStore(t, func(o *db.Options) { o.Limits.MaxFileBytes = int64(len(data)) + 100 })
	root := t.TempDir()
	var syncs []watch.Sync
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) { syncs = append(syncs, s) }})
	path := filepath.Join(root, "_no-cwd", basicID, "session.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, data, 0o644)
	w.Scan(ctx)
	if got := eventCount(t, st, basicID); got != 39 {
		t.Fatalf("%d events within the limit, want 39", got)
	}
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write(bytes.Repeat([]byte(" "), 4096))
	fh.Close()
	syncs = nil
	w.Scan(ctx)
	if len(syncs) == 0 || syncs[len(syncs)-1].Outcome != "failed" || !strings.Contains(fmt.Sprint(syncs[len(syncs)-1].Err), "larger than the limit") {
		t.Fatalf("syncs after growing past the limit = %+v, want a failure naming the limit", syncs)
	}
	if got := eventCount(t, st, basicID); got != 39 {
		t.Errorf("%d events after the refused growth, want the 39 stored before", got)
	}
}

// TestWatcher_deletedSessionStaysDeleted: a watched session deleted during
// the watch is not imported again when its file grows or is rewritten
// (reported once as skipped, logged); an explicit import brings it back and
// the watcher follows the file again; a watch of a newly opened store (the
// next run) imports it again.
func TestWatcher_deletedSessionStaysDeleted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := db.Open(ctx, path, db.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	root := t.TempDir()
	var syncs []watch.Sync
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) { syncs = append(syncs, s) }})
	f := newDshFile(t, root, "basic/session.jsonl.zstd")
	scan := func(want int64, step string) {
		t.Helper()
		if err := w.Scan(ctx); err != nil {
			t.Fatalf("%s: Scan: %v", step, err)
		}
		if got := eventCount(t, st, basicID); got != want {
			t.Fatalf("%s: %d events stored, want %d", step, got, want)
		}
	}
	f.publish(2)
	scan(4, "watched")
	if _, err := st.DeleteSession(ctx, basicID); err != nil {
		t.Fatal(err)
	}
	syncs = nil
	f.appendBytes(f.frames[2])
	f.n = 3
	scan(-1, "grown after the delete")
	if len(syncs) != 1 || syncs[0].Outcome != "skipped" || syncs[0].SessionID != basicID {
		t.Fatalf("syncs after the delete = %+v, want one skipped", syncs)
	}
	f.appendBytes(f.frames[3])
	f.n = 4
	scan(-1, "grown again")
	os.Remove(f.path)
	f.publish(4)
	scan(-1, "rewritten")
	if len(syncs) != 1 {
		t.Errorf("the skipped file was reported again: %+v", syncs[1:])
	}

	// Imported by hand: the session is back, and the watch reconciles
	// the file with it again instead of skipping it.
	if _, err := st.ImportFile(ctx, f.path); err != nil {
		t.Fatal(err)
	}
	if n := eventCount(t, st, basicID); n <= 0 {
		t.Fatalf("imported: %d events", n)
	}
	f.appendBytes(f.frames[4])
	f.n = 5
	syncs = nil
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if len(syncs) != 1 || syncs[0].Outcome == "skipped" {
		t.Errorf("after the import the watch still skips the file: %+v", syncs)
	}

	// Deleted again, then the next run: a newly opened store's watch
	// imports it.
	if _, err := st.DeleteSession(ctx, basicID); err != nil {
		t.Fatal(err)
	}
	scan(-1, "deleted again")
	st.Close()
	if st, err = db.Open(ctx, path, db.Options{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	w = watch.New(st, root, watch.Options{Logger: quietLogger()})
	scan(34, "the next run") // the file's frames: 4 + 25 + 2 + 3 events
}
