package db

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"prism/core/search"
	"prism/store/storetest"
)

// findsSeq searches st for q (newest first, one page) and reports whether
// a hit of session "s" is at seq, and how many searches handed off to the
// writer so far (catchUpIndex).
func findsSeq(t *testing.T, st *Store, q string, seq int64) (found bool, handoffs int64) {
	t.Helper()
	parsed, err := search.Parse(q, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.Search(context.Background(), parsed, SearchOptions{Order: OrderTime, Limit: 50})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	found = slices.ContainsFunc(page.Hits, func(h SearchHit) bool { return h.SessionID == "s" && h.Seq == seq })
	return found, st.w.indexRequests.Load()
}

// skipsTheWriter reports whether a search of q (finding seq) skips the
// writer: whether one of a few in a row does not hand off to it. A search
// finds the writer's lock taken — and hands off — while the writer
// goroutine finishes serving the previous hand-off or looks at its lag
// between two requests; every one handing off means the skip is not made.
func skipsTheWriter(t *testing.T, st *Store, q string, seq int64) bool {
	t.Helper()
	for range 10 {
		before := st.w.indexRequests.Load()
		found, after := findsSeq(t, st, q, seq)
		if !found {
			t.Fatalf("%s does not find seq %d", q, seq)
		}
		if after == before {
			return true
		}
	}
	return false
}

// TestSearchFindsItsOwnCommitAndSkipsTheWriterWhenNothingLags: a search
// right after this process's acknowledged append finds it (the lag is
// filed through the writer first: the search hands off), and a search with
// nothing lagging does not hand off to the writer at all.
func TestSearchFindsItsOwnCommitAndSkipsTheWriterWhenNothingLags(t *testing.T) {
	ctx := context.Background()
	st := openLagging(t)
	for turn := range 3 {
		at := int64(turn * 8)
		if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(at, turn, turn == 1)); err != nil {
			t.Fatal(err)
		}
		if got := watermarks(t, st.rdb)["s"]; got[0] >= at {
			t.Fatalf("turn %d: watermark and last seq %v, want the append unindexed (the test proves nothing)", turn, got)
		}
		before := st.w.indexRequests.Load()
		found, after := findsSeq(t, st, "tool:note", at+4)
		if !found {
			t.Fatalf("turn %d: tool:note right after its append does not find its card (seq %d)", turn, at+4)
		}
		if after != before+1 {
			t.Errorf("turn %d: %d hand-offs to the writer for a search with a lag, want 1", turn, after-before)
		}
		// Nothing lags now: the same search again skips the writer.
		if !skipsTheWriter(t, st, "tool:note", at+4) {
			t.Errorf("turn %d: every search with nothing lagging handed off to the writer", turn)
		}
	}
	if found, _ := findsSeq(t, st, "error:", 8+4); !found {
		t.Error("error: does not find the failed card of turn 1")
	}
	storetest.CheckSearchIndex(t, st)
}

// TestSearchFindsAnotherHandlesCommit: two Stores on one file, as a
// server beside a CLI import or watch: the events one commits (and keeps
// in its own lag, unindexed) are found by the other's very next search —
// its writer sees another connection's commit (data_version) and files
// the sessions behind their watermark — while searches with nothing new
// on the file skip its writer.
func TestSearchFindsAnotherHandlesCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	server, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	lagForever(t, server)
	storetest.MustCreate(t, server, "s")
	if err := server.AppendEvents(ctx, "s", storetest.TurnEvents(0, 0, false)); err != nil {
		t.Fatal(err)
	}
	cli, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	lagForever(t, cli)
	if found, _ := findsSeq(t, server, "tool:note", 4); !found {
		t.Fatal("the server does not find its own card")
	}
	for turn := 1; turn <= 3; turn++ {
		at := int64(turn * 8)
		// Nothing new on the file: the server's search skips its writer.
		if !skipsTheWriter(t, server, "tool:note", 4) {
			t.Errorf("turn %d: every search with nothing new handed off to the writer", turn)
		}
		if err := cli.AppendEvents(ctx, "s", storetest.TurnEvents(at, turn, true)); err != nil {
			t.Fatal(err)
		}
		raw, err := sql.Open("sqlite3", path)
		if err != nil {
			t.Fatal(err)
		}
		marks := watermarks(t, raw)
		raw.Close()
		if got := marks["s"]; got[0] >= at {
			t.Fatalf("turn %d: watermark and last seq %v, want the other handle's append unindexed (the test proves nothing)", turn, got)
		}
		for _, q := range []string{"tool:note", "error:", fmt.Sprintf(`"thing %d"`, turn)} {
			want := at + 4
			if q[0] == '"' {
				want = at + 2
			}
			if found, _ := findsSeq(t, server, q, want); !found {
				t.Fatalf("turn %d: %s right after another handle's commit does not find seq %d", turn, q, want)
			}
		}
	}
	storetest.CheckSearchIndex(t, server)
	if err := cli.Close(); err != nil { // files nothing twice: the server did
		t.Fatal(err)
	}
	storetest.CheckSearchIndex(t, server)
}

// TestSearchFindsEveryAcknowledgedAppendWhileAppending: appends go on (on
// the appender's goroutine and through the writer's) while a searcher,
// told of each acknowledged append, searches for it at once: every one is
// found, whether the search handed off to the writer or skipped it.
func TestSearchFindsEveryAcknowledgedAppendWhileAppending(t *testing.T) {
	ctx := context.Background()
	st := openLagging(t)
	storetest.MustCreate(t, st, "other")
	acked := make(chan int64)
	errs := make(chan error, 2)
	const turns = 40
	go func() {
		defer close(acked)
		for turn := range turns {
			at := int64(turn * 8)
			if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(at, turn, false)); err != nil {
				errs <- err
				return
			}
			acked <- at + 4
		}
	}()
	go func() { // a second appender keeps the writer busy
		for turn := range turns {
			if err := st.AppendEvents(ctx, "other", storetest.TurnEvents(int64(turn*8), turn, false)); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for seq := range acked {
		if found, _ := findsSeq(t, st, "tool:note session:s", seq); !found {
			t.Fatalf("tool:note right after the append of seq %d does not find it", seq)
		}
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	storetest.CheckSearchIndex(t, st)
}
