package watch_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"prism/core"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/watch"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The PostgreSQL store is one a watcher writes into.
var _ watch.Store = (*pgstore.Store)(nil)

// TestWatchIntoPostgres tails a Codex rollout into a PostgreSQL store
// through the same watcher: the session is created, grows, and a session
// deleted during the run is skipped while its file changes.
func TestWatchIntoPostgres(t *testing.T) {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgtest.DB(t), pgstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	root := t.TempDir()
	text, err := os.ReadFile("../codex/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	path := filepath.Join(root, "2026", "05", "01", "rollout-2026-05-01T10-00-00-"+id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	half := len(text) / 2
	for half > 0 && text[half-1] != '\n' {
		half--
	}
	if err := os.WriteFile(path, text[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	var syncs []watch.Sync
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) { syncs = append(syncs, s) }})
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := st.LoadSession(ctx, id)
	if err != nil {
		t.Fatalf("after the first scan: %v (syncs %+v)", err, syncs)
	}
	first := len(l.Events)
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err = st.LoadSession(ctx, id); err != nil || len(l.Events) <= first || l.Events[len(l.Events)-1].Type != "source/raw" {
		t.Fatalf("grown rollout: %d events (was %d), err %v", len(l.Events), first, err)
	}
	if _, err := st.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timestamp":"2026-05-01T10:01:00.000Z","type":"world_state","payload":{}}` + "\n")
	f.Close()
	if err := w.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LoadSession(ctx, id); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("a session deleted during the run came back: %v", err)
	}
}

// TestWatchSharedFolder runs two nodes of one PostgreSQL store on a folder
// both see (--watch-shared): one holds it and tails it, the other reads
// nothing; when the holder dies (its lock's connection ends), the other
// takes the folder over on its next polls and tails it.
func TestWatchSharedFolder(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	open := func() *pgstore.Store {
		st, err := pgstore.Open(ctx, url, pgstore.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := open(), open()
	root := t.TempDir()
	lockA, lockB := a.FolderLock(root), b.FolderLock(root)
	defer lockB.Close()
	wa := watch.New(a, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Shared: lockA})
	wb := watch.New(b, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Shared: lockB})
	if held, err := wa.Poll(ctx); err != nil || !held {
		t.Fatalf("node A: held %v, err %v", held, err)
	}
	if held, err := wb.Poll(ctx); err != nil || held {
		t.Fatalf("node B while A holds the folder: held %v, err %v", held, err)
	}
	text, err := os.ReadFile("../codex/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	if err := os.WriteFile(filepath.Join(root, "rollout-2026-05-01T10-00-00-"+id+".jsonl"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	lockA.Close() // node A dies: its lock's connection ends
	// PostgreSQL frees the lock once A's backend has gone: B's polls take
	// it (each poll is a round trip to the server, no sleeping).
	held := false
	for i := 0; i < 10000 && !held; i++ {
		if held, err = wb.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !held {
		t.Fatal("node B never took the folder over")
	}
	if _, err := b.LoadSession(ctx, id); err != nil {
		t.Errorf("node B did not tail the folder it took over: %v", err)
	}
}

// TestWatchIncrementalIntoPostgres is TestWatchIncrementalEqualsWholeRead
// on PostgreSQL (whose store appends and reconciles a rewritten end
// whole) for a Claude Code and a Codex transcript pair (the Codex pair
// also with the child's rollout started first) and a cut-back file.
func TestWatchIncrementalIntoPostgres(t *testing.T) {
	const ccSID = "5a1d0000-0000-4000-8000-0000000000c2"
	const parent, child = "0196a1b2-0000-7000-8000-0000000000e1", "0196a1b2-0000-7000-8000-0000000000e2"
	pText, cText := codexFamily(parent, child)
	open := func(t *testing.T) watchStore {
		st, err := pgstore.Open(context.Background(), pgtest.DB(t), pgstore.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	for name, files := range map[string][]growFile{
		"claude-code talk": {
			{rel: "cc/-home-dev-app/" + ccSID + ".jsonl", text: ccTalk(ccSID), chunks: 60},
			{rel: "cc/-home-dev-app/" + ccSID + "/subagents/agent-b1.jsonl", text: ccChild(ccSID), chunks: 6},
		},
		"codex family": {
			{rel: "codex/2026/05/01/rollout-2026-05-01T10-00-00-" + parent + ".jsonl", text: pText, chunks: 20},
			{rel: "codex/2026/05/01/rollout-2026-05-01T10-00-08-" + child + ".jsonl", text: cText, chunks: 5},
		},
		"codex child first": {
			{rel: "codex/2026/05/01/rollout-2026-05-01T10-00-08-" + child + ".jsonl", text: cText, chunks: 3},
			{rel: "codex/2026/05/01/rollout-2026-05-01T10-00-00-" + parent + ".jsonl", text: pText, chunks: 20},
		},
		"claude-code cut back": {
			{rel: "cc/-p/" + ccSID + ".jsonl", text: ccTalk(ccSID), chunks: 30, rewrite: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			growAndCompare(t, open, files, rand.New(rand.NewPCG(1, 37)), false)
		})
	}
}
