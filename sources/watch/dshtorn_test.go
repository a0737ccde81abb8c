package watch_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"prism/core"
	"prism/db"
	"prism/sources/dsh"
	"prism/sources/watch"
)

// rchar is the bytes this process has read through read(2)/pread(2)
// (Linux's /proc/self/io).
func rchar(t *testing.T) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Fatalf("read /proc/self/io: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("/proc/self/io has no rchar line")
	return 0
}

// TestWatchDshTornTailUnchangedReadsNothing: a dsh log whose last frame is
// torn (dsh mid-write, or a dsh that crashed) and that does not change
// between polls is not read again: not its prefix (to check its sum), not
// its torn bytes — 10 polls of it read less than the file once.
func TestWatchDshTornTailUnchangedReadsNothing(t *testing.T) {
	ctx := context.Background()
	const id = "0b1c6d2e-5f4a-4e3b-9c8d-000000000ccc"
	h := core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1764500000000, Cwd: "/home/dev/app"}
	batches := dshBatches(3001)
	data, err := dsh.AppendZstdLog(nil, h, batches[:3000])
	if err != nil {
		t.Fatal(err)
	}
	text, err := dsh.AppendDshLines(nil, batches[3000])
	if err != nil {
		t.Fatal(err)
	}
	frame, err := dsh.EncodeFrame(text)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, frame[:len(frame)/2]...) // a torn last frame
	root := t.TempDir()
	path := filepath.Join(root, "--home-dev-app--", id, "session.jsonl.zstd")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st := newTestStore(t, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: 1 << 30} })
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) {
		if s.Err != nil {
			t.Errorf("sync: %v", s.Err)
		}
	}})
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	const polls = 10
	before := rchar(t)
	for range polls {
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	read := rchar(t) - before
	t.Logf("file %d bytes; %d polls of the unchanged file read %d bytes (%.1f× the file)", len(data), polls, read, float64(read)/float64(len(data)))
	if read > int64(len(data)) {
		t.Errorf("%d polls of an unchanged dsh log with a torn last frame read %d bytes: its whole prefix is summed again at every poll", polls, read)
	}
}
