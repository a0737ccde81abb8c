package watch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"prism/core"
	"prism/sources/claudecode"
	"prism/sources/codex"
	"prism/sources/dsh"
	"prism/sources/watch"
	"prism/store"
)

func foreignFormats() []dsh.Foreign { return []dsh.Foreign{claudecode.Format(), codex.Format()} }

// callStates returns, for each call id of the stored session, whether its
// result is stored.
func callStates(t *testing.T, st store.Store, id string) map[string]bool {
	t.Helper()
	l, err := st.LoadSession(context.Background(), id)
	if err != nil {
		return nil
	}
	calls := map[string]bool{}
	for _, e := range l.Events {
		switch e.Type {
		case core.EventToolCall:
			var c core.ToolCall
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			calls[c.CallID] = calls[c.CallID] || false
		case core.EventToolResult:
			var r core.ToolResultData
			if err := json.Unmarshal(e.Data, &r); err != nil {
				t.Fatal(err)
			}
			calls[r.CallID()] = true
		}
	}
	return calls
}

// TestWatchForeignLineByLine tails a folder mixing a Claude Code project
// and a Codex sessions tree, written line by line, one Scan per line (Scan
// is synchronous: no sleeps): each call is stored pending once its line is
// in, and completed once its result line lands; a partial last line is
// read once complete; the health view has a row per kind.
func TestWatchForeignLineByLine(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	root := t.TempDir()
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
	cases := []struct {
		fixture, path, id string
	}{
		{"../claudecode/testdata/parallel.jsonl", "-home-dev-app/7d3e0c1a-0000-4000-8000-0000000000aa.jsonl", ""},
		{"../codex/testdata/parallel.jsonl", "2026/05/02/rollout-2026-05-02T09-00-00-0199a1b2-0000-7000-8000-000000000002.jsonl", "0199a1b2-0000-7000-8000-000000000002"},
	}
	for _, c := range cases {
		text, err := os.ReadFile(c.fixture)
		if err != nil {
			t.Fatal(err)
		}
		id := c.id
		if id == "" {
			l, err := claudecode.ReadLog(bufioReader(text), dsh.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			id = l.Header.ID
		}
		path := filepath.Join(root, c.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		pendingSeen := map[string]bool{}
		completedAfterPending := 0
		lines := strings.SplitAfter(string(text), "\n")
		for i, line := range lines {
			if line == "" {
				continue
			}
			// Half the line first: nothing new may be read of it.
			half := len(line) / 2
			before := callStates(t, st, id)
			if _, err := f.WriteString(line[:half]); err != nil {
				t.Fatal(err)
			}
			if err := w.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if mid := callStates(t, st, id); len(mid) != len(before) {
				t.Fatalf("%s line %d: a partial line was read (%d calls, %d before)", c.fixture, i+1, len(mid), len(before))
			}
			if _, err := f.WriteString(line[half:]); err != nil {
				t.Fatal(err)
			}
			if err := w.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			for call, done := range callStates(t, st, id) {
				if !done {
					pendingSeen[call] = true
				} else if pendingSeen[call] {
					pendingSeen[call] = false
					completedAfterPending++
				}
			}
		}
		f.Close()
		final := callStates(t, st, id)
		if len(final) == 0 || completedAfterPending == 0 {
			t.Errorf("%s: calls %v; %d completed after being stored pending", c.fixture, final, completedAfterPending)
		}
		for call, done := range final {
			if !done {
				t.Errorf("%s: call %s still pending at the end", c.fixture, call)
			}
		}
	}
	rows := w.SourceHealth()
	kinds := map[string]core.SourceHealth{}
	for _, r := range rows {
		kinds[r.Kind] = r
	}
	for _, k := range []string{claudecode.Source, codex.SourceName} {
		if r := kinds[k]; r.Sessions != 1 || r.Files != 1 || r.LastRead.IsZero() || r.LastLine == 0 {
			t.Errorf("health row %s = %+v", k, r)
		}
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestWatchGoesOn checks the watcher's bad days: the folder missing at
// first (reported in the health view, then read once it exists), a
// transcript deleted under it (reported; its session stays stored), a file
// of no known kind (left out, with why), and a malformed line (kept raw,
// counted) — and it goes on with the other files each time.
func TestWatchGoesOn(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	root := filepath.Join(t.TempDir(), "projects")
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := w.SourceHealth(); len(rows) != 1 || !strings.Contains(rows[0].LastError, "does not exist") {
		t.Fatalf("missing folder: rows %+v", rows)
	}
	text, err := os.ReadFile("../claudecode/testdata/unknown.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	l, err := claudecode.ReadLog(bufioReader(text), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(root, "-p", "one.jsonl")
	if err := os.MkdirAll(filepath.Dir(first), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "-p", "journal.jsonl"), []byte(`{"type":"started","key":"k"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LoadSession(ctx, l.Header.ID); err != nil {
		t.Fatalf("the folder once it exists: %v", err)
	}
	kinds := map[string]core.SourceHealth{}
	for _, r := range w.SourceHealth() {
		kinds[r.Kind] = r
	}
	cc := kinds[claudecode.Source]
	if cc.Raw == 0 || !strings.Contains(cc.RawWhy, "kept raw") || cc.LastError != "" {
		t.Errorf("claude-code row after a malformed line: %+v", cc)
	}
	if o := kinds["other"]; o.Skipped != 1 || !strings.Contains(o.SkippedWhy, "journal.jsonl") {
		t.Errorf("other row: %+v", o)
	}
	if err := os.Remove(first); err != nil {
		t.Fatal(err)
	}
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range w.SourceHealth() {
		if r.Kind == claudecode.Source && !strings.Contains(r.LastError, "deleted or replaced") {
			t.Errorf("after the delete: %+v", r)
		}
	}
	if _, err := st.LoadSession(ctx, l.Header.ID); err != nil {
		t.Errorf("the deleted file's session is gone: %v", err)
	}
}

// TestWatchCodexArchive reads a Codex .jsonl.zst archive in a watched
// folder like the plain rollout, and reports a corrupt archive while going
// on with the rest.
func TestWatchCodexArchive(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	root := t.TempDir()
	text, err := os.ReadFile("../codex/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	enc, err := zstd.NewWriter(&z)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(text)
	enc.Close()
	const id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	if err := os.WriteFile(filepath.Join(root, "rollout-2026-05-01T10-00-00-"+id+".jsonl.zst"), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := append(append([]byte{}, z.Bytes()[:8]...), bytes.Repeat([]byte{0xff}, 32)...)
	if err := os.WriteFile(filepath.Join(root, "rollout-2026-05-02T10-00-00-0199a1b2-c3d4-7e5f-8a9b-00000000bad0.jsonl.zst"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var failed []watch.Sync
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) {
		if s.Err != nil {
			failed = append(failed, s)
		}
	}})
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := st.LoadSession(ctx, id); err != nil || len(l.Events) == 0 {
		t.Fatalf("archive: %v", err)
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), "bad0.jsonl.zst") || !strings.Contains(failed[0].Err.Error(), "corrupt zstd archive") {
		t.Errorf("the corrupt archive's report: %+v", failed)
	}
}
