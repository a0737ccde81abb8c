package watch_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"prism/db"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/dsh"
)

// TestWatchEvictedTailRewrittenInPlace: a transcript whose decoder state
// the watcher dropped (two transcripts, room in the budget for one: the
// less recently read one's is dropped) is then rewritten in place — same
// inode, one line changed in its middle, the same length — with nothing
// after its last complete line, or with a partial line after it. Its
// complete lines end where they did, so it looks like a file that only
// grew by a partial line (or had its times changed); the watcher must
// still tell the rewrite (it keeps the sum of what it read when it drops
// the state) and read the file whole, so that the store equals a whole
// read, not the stale log. Rewritten and grown by complete lines, it is
// read whole as well.
func TestWatchEvictedTailRewrittenInPlace(t *testing.T) {
	ctx := context.Background()
	for _, e := range []struct {
		name string
		open func(t *testing.T, lim dsh.Limits) watchStore
	}{
		{"sqlite", func(t *testing.T, lim dsh.Limits) watchStore {
			return newTestStore(t, func(o *db.Options) { o.Limits = lim })
		}},
		{"postgres", func(t *testing.T, lim dsh.Limits) watchStore {
			st, err := pgstore.Open(ctx, pgtest.DB(t), pgstore.Options{Logger: quietLogger(), Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		for _, k := range growKinds {
			for _, c := range []struct {
				name  string
				after string // what follows the rewritten lines
			}{
				{"same-size", ""},
				{"partial-line", `{"type":"user","mess`},
				// Grown by complete lines: read whole, as a file whose
				// state was dropped always is when it grows.
				{"grown", generated(k.line, 130)[len(generated(k.line, 120)):]},
			} {
				t.Run(e.name+"/"+k.name+"/"+c.name, func(t *testing.T) {
					text := generated(k.line, 120)
					// What one transcript's decoder state holds: the budget
					// has room for one.
					fg := dsh.DetectForeign([]byte(text), foreignFormats())
					probe := fg.Tail("probe.jsonl", dsh.Limits{MaxMemoryBytes: 1 << 30})
					if err := probe.Feed(bufio.NewReader(strings.NewReader(text))); err != nil {
						t.Fatal(err)
					}
					st := &countingStore{watchStore: e.open(t, dsh.Limits{MaxMemoryBytes: probe.Mem() * 3 / 2})}
					root := t.TempDir()
					// a is read first, b after it: a's state is dropped.
					other := k.id[:len(k.id)-6] + "bbbbbb" // b is its own session
					paths := []string{filepath.Join(root, "a", k.rel), filepath.Join(root, "b", strings.ReplaceAll(k.rel, k.id, other))}
					for i, p := range paths {
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						body := text
						if i == 1 {
							body = strings.ReplaceAll(text, k.id, other)
						}
						if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					w := newQuietWatcher(t, st, root)
					scanOK(t, w)
					if st.syncs != 2 {
						t.Fatalf("the first scan reconciled %d sessions, want 2", st.syncs)
					}
					// a rewritten in place: a prompt in its middle changed,
					// the same length.
					mid := strings.Index(text[len(text)/2:], "look at the build")
					if mid < 0 {
						t.Fatal("no prompt in the middle of the transcript")
					}
					at := len(text)/2 + mid
					after := text[:at] + "LOOK AT THE BUILD" + text[at+len("look at the build"):] + c.after
					ino := inode(t, paths[0])
					if err := os.WriteFile(paths[0], []byte(after), 0o644); err != nil { // truncates: the same inode
						t.Fatal(err)
					}
					if inode(t, paths[0]) != ino {
						t.Fatal("the rewrite made a new file")
					}
					scanOK(t, w)
					logs := wholeRead(t, paths[0])
					if len(logs) != 1 {
						t.Fatalf("a whole read: %d sessions", len(logs))
					}
					stored, err := st.LoadSession(ctx, logs[0].Header.ID)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := eventsJSON(t, stored.Events), eventsJSON(t, logs[0].Events); !reflect.DeepEqual(got, want) {
						t.Fatalf("a transcript rewritten in place while its decoder state was dropped kept its stale events; first difference:\n%s", firstDiff(got, want))
					}
					// b's state is dropped now (a was read last); b touched
					// only (new times, the same bytes) is trusted by its sum,
					// not read again.
					syncs := st.syncs
					fi, err := os.Stat(paths[1])
					if err != nil {
						t.Fatal(err)
					}
					later := fi.ModTime().Add(time.Second)
					if err := os.Chtimes(paths[1], later, later); err != nil {
						t.Fatal(err)
					}
					scanOK(t, w)
					if st.syncs != syncs || st.appends != 0 {
						t.Errorf("a touched transcript was read again: %d reconciliations (was %d), %d appends", st.syncs, syncs, st.appends)
					}
				})
			}
		}
	}
}
