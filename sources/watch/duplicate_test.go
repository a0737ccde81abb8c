package watch_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"prism/core"
	"prism/sources/codex"
	"prism/sources/dsh"
)

// codexArchiveRead is a whole read of the Codex archive at path.
func codexArchiveRead(path string) ([]*dsh.Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fg := codex.Format()
	return fg.ReadFileAt(path, f, fi.Size(), true, dsh.Limits{MaxMemoryBytes: 1 << 30})
}

// TestWatchDuplicateFileOwner has two files yield one session: a Codex
// rollout and, beside it, its .jsonl.zst archive (a copy further along)
// and a plain copy that grows on its own. The session follows one owner,
// the first file seen (by path order within a poll: the rollout), whatever
// the others do; the others are reported as duplicates of it with their
// paths; once the owner is deleted, the next file takes the session over.
func TestWatchDuplicateFileOwner(t *testing.T) {
	ctx := context.Background()
	text := fixtureText(t, "../codex/testdata/plain.jsonl")
	half := len(text) / 2
	for text[half-1] != '\n' {
		half--
	}
	const id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	extra := `{"timestamp":"2026-05-01T10:01:00.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Only in the copy."}]}}` + "\n"
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			st := e.open(t)
			root := t.TempDir()
			dir := filepath.Join(root, "2026", "05", "01")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			name := "rollout-2026-05-01T10-00-00-" + id
			owner := filepath.Join(dir, name+".jsonl")
			archive := filepath.Join(dir, name+".jsonl.zst")
			copied := filepath.Join(root, "copy", name+".jsonl")
			if err := os.MkdirAll(filepath.Dir(copied), 0o755); err != nil {
				t.Fatal(err)
			}
			var z bytes.Buffer
			enc, err := zstd.NewWriter(&z)
			if err != nil {
				t.Fatal(err)
			}
			enc.Write([]byte(text))
			enc.Close()
			for path, b := range map[string][]byte{owner: []byte(text[:half]), archive: z.Bytes(), copied: []byte(text[:half] + extra)} {
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w := newQuietWatcher(t, st, root)
			same := func(when, path string) {
				t.Helper()
				var logs []*dsh.Log
				if path == archive {
					var err error
					if logs, err = codexArchiveRead(path); err != nil {
						t.Fatal(err)
					}
				} else {
					logs = wholeRead(t, path)
				}
				stored, err := st.LoadSession(ctx, id)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if got, want := eventsJSON(t, stored.Events), eventsJSON(t, logs[0].Events); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: the session is not %s's (%d events stored, %d there):\n%s", when, filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), len(got), len(want), firstDiff(got, want))
				}
			}
			dups := func(when string, want ...string) {
				t.Helper()
				var row core.SourceHealth
				for _, r := range w.SourceHealth() {
					if r.Kind == "codex" {
						row = r
					}
				}
				if row.Skipped != len(want) {
					t.Fatalf("%s: the codex row reports %d duplicates (%q), want %d", when, row.Skipped, row.SkippedWhy, len(want))
				}
				for _, p := range want {
					if !strings.Contains(row.SkippedWhy, p) && len(want) == 1 {
						t.Errorf("%s: the duplicate's report %q does not name %s", when, row.SkippedWhy, p)
					}
				}
				if len(want) > 0 && !strings.Contains(row.SkippedWhy, "duplicate of "+owner) && !strings.Contains(row.SkippedWhy, "duplicate of "+archive) {
					t.Errorf("%s: the duplicate's report %q does not name the owner", when, row.SkippedWhy)
				}
			}
			scanOK(t, w)
			same("first poll", owner)
			dups("first poll", archive, copied)
			// The copy and the owner grow; the copy grows further.
			appendFile(t, copied, extra)
			scanOK(t, w)
			same("the copy grew", owner)
			appendFile(t, owner, text[half:])
			scanOK(t, w)
			same("the owner grew", owner)
			scanOK(t, w)
			same("a quiet poll", owner)
			// The owner goes: the next file (by path order) takes over.
			if err := os.Remove(owner); err != nil {
				t.Fatal(err)
			}
			scanOK(t, w)
			scanOK(t, w)
			same("the owner deleted", archive)
			dups("the owner deleted", copied)
		})
	}
}

// TestWatchDuplicateDshLog: a dsh session directory copied under another
// project yields the same session id from two logs; the session follows
// the first (by path), the copy is reported as its duplicate, whatever
// it grows to, until the first is deleted.
func TestWatchDuplicateDshLog(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			st := e.open(t)
			root := t.TempDir()
			owner := newDshFile(t, root, "basic/session.jsonl.zstd")
			copied := newDshFile(t, root, "basic/session.jsonl.zstd")
			copied.path = filepath.Join(root, "--home-bob-src-app--", basicID, "session.jsonl.zstd")
			if len(owner.frames) < 4 {
				t.Fatalf("the fixture has %d frames", len(owner.frames))
			}
			owner.publish(2)
			copied.publish(len(copied.frames) - 1)
			w := newQuietWatcher(t, st, root)
			count := func() int {
				t.Helper()
				l, err := st.LoadSession(ctx, basicID)
				if err != nil {
					t.Fatal(err)
				}
				return len(l.Events)
			}
			scanOK(t, w)
			ownerEvents := count()
			fresh := e.open(t)
			fw := newQuietWatcher(t, fresh, filepath.Dir(filepath.Dir(owner.path)))
			scanOK(t, fw)
			if l, err := fresh.LoadSession(ctx, basicID); err != nil || len(l.Events) != ownerEvents {
				t.Fatalf("the session has %d events, the first log alone makes %d (%v)", ownerEvents, len(l.Events), err)
			}
			dshRow := func() core.SourceHealth {
				for _, r := range w.SourceHealth() {
					if r.Kind == "dsh" {
						return r
					}
				}
				return core.SourceHealth{}
			}
			if r := dshRow(); r.Skipped != 1 || !strings.Contains(r.SkippedWhy, copied.path) || !strings.Contains(r.SkippedWhy, "duplicate of "+owner.path) {
				t.Errorf("the dsh row: %d skipped, %q; want the copy reported as a duplicate of the first", r.Skipped, r.SkippedWhy)
			}
			copied.appendBytes(copied.frames[len(copied.frames)-1])
			scanOK(t, w)
			if got := count(); got != ownerEvents {
				t.Errorf("after the copy grew: %d events, want the first log's %d", got, ownerEvents)
			}
			if err := os.Remove(owner.path); err != nil {
				t.Fatal(err)
			}
			scanOK(t, w)
			scanOK(t, w)
			if got := count(); got <= ownerEvents {
				t.Errorf("the first log deleted: %d events, want the copy's (more than %d)", got, ownerEvents)
			}
			if r := dshRow(); r.Skipped != 0 {
				t.Errorf("the first log deleted: the dsh row still reports %d duplicates (%q)", r.Skipped, r.SkippedWhy)
			}
		})
	}
}
