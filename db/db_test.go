package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"prism/core"
	"prism/store/storetest"
)

const fixtures = "../testdata/dsh"

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestStore opens a store in a fresh file under t.TempDir().
func newTestStore(t testing.TB, opts ...func(*Options)) *Store {
	t.Helper()
	o := Options{Logger: quietLogger()}
	for _, f := range opts {
		f(&o)
	}
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "prism.db"), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// holdWriter parks the writer goroutine inside a transaction until the
// returned release is called, so that requests queue up behind it.
func holdWriter(t *testing.T, st *Store) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- st.write(context.Background(), func(*wtx) error {
			close(entered)
			<-gate
			return nil
		})
	}()
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("held transaction: %v", err)
		}
	}
}

// waitQueued waits until n requests are queued for the writer.
func waitQueued(st *Store, n int) {
	for st.queue.Len() < n {
		runtimeGosched()
	}
}

func TestOpen_pragmasAndMigrations(t *testing.T) {
	for _, normal := range []bool{false, true} {
		t.Run(fmt.Sprintf("SyncNormal=%v", normal), func(t *testing.T) {
			st := newTestStore(t, func(o *Options) { o.SyncNormal = normal })
			var mode string
			var sync int
			st.wdb.QueryRow("PRAGMA journal_mode").Scan(&mode)
			st.wdb.QueryRow("PRAGMA synchronous").Scan(&sync)
			want := 2
			if normal {
				want = 1
			}
			if mode != "wal" || sync != want {
				t.Errorf("journal_mode=%s synchronous=%d, want wal and %d", mode, sync, want)
			}
			var n int
			st.rdb.QueryRow("SELECT count(*) FROM migrations WHERE name = '0001_create_sessions.sql'").Scan(&n)
			if n != 1 {
				t.Errorf("migration 0001 recorded %d times, want 1", n)
			}
			// Reopening applies nothing twice.
			path := st.Path()
			st.Close()
			st2, err := Open(context.Background(), path, Options{Logger: quietLogger()})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			st2.Close()
		})
	}
}

func TestOpen_refusesMemoryAndUnknownMigrations(t *testing.T) {
	if _, err := Open(context.Background(), ":memory:", Options{}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("Open(:memory:) error = %v, want %s", err, core.CodeInvalid)
	}
	st := newTestStore(t)
	path := st.Path()
	st.wdb.Exec("INSERT INTO migrations VALUES ('9999_from_the_future.sql', 0)")
	st.Close()
	if _, err := Open(context.Background(), path, Options{Logger: quietLogger()}); err == nil {
		t.Error("Open with an unknown applied migration succeeded")
	}
}

func TestStore_groupCommitIsolatesBadRequests(t *testing.T) {
	for _, isolated := range []bool{false, true} {
		t.Run(fmt.Sprintf("savepoints=%v", isolated), func(t *testing.T) {
			ctx := context.Background()
			st := newTestStore(t)
			st.w.isolateAlways = isolated
			for i := 0; i < 4; i++ {
				storetest.MustCreate(t, st, fmt.Sprint("s", i))
			}
			before := st.w.commits.Load()
			release := holdWriter(t, st)
			errs := make([]error, 6)
			var wg sync.WaitGroup
			reqs := [][]core.Event{
				storetest.TurnEvents(0, 1, false),
				{storetest.Ev(3, core.EventTurnStart, `{"turn":1}`)}, // gap: rejected
				storetest.TurnEvents(0, 1, true),
				{storetest.Ev(0, core.EventTurnStart, `{"turn":`)}, // bad JSON: rejected
				storetest.TurnEvents(0, 1, false),
				storetest.TurnEvents(8, 2, false), // continues request 4 only if it lands after it
			}
			ids := []string{"s0", "s1", "s2", "s3", "s3", "s0"}
			for i := range reqs {
				wg.Add(1)
				waitQueued(st, i)
				go func() {
					defer wg.Done()
					errs[i] = st.AppendEvents(ctx, ids[i], reqs[i])
				}()
			}
			waitQueued(st, len(reqs))
			release()
			wg.Wait()
			wantErr := []string{"", core.CodeConflict, "", core.CodeInvalid, "", ""}
			for i, e := range errs {
				if core.ErrorCode(e) != wantErr[i] {
					t.Errorf("request %d (%s): err = %v, want code %q", i, ids[i], e, wantErr[i])
				}
			}
			if got := st.w.commits.Load() - before; got != 2 {
				t.Errorf("%d commits, want 2 (the held transaction and one group commit)", got)
			}
			for id, want := range map[string]int64{"s0": 15, "s1": -1, "s2": 7, "s3": 7} {
				info, _ := st.Session(ctx, id)
				if info.LastSeq != want {
					t.Errorf("%s: LastSeq = %d, want %d", id, info.LastSeq, want)
				}
			}
			s2, _ := st.Session(ctx, "s2")
			if s2.Errors != 1 || s2.Calls != 1 {
				t.Errorf("s2 calls/errors = %d/%d, want 1/1", s2.Calls, s2.Errors)
			}
		})
	}
}

func TestStore_contextWithdrawsQueuedAppend(t *testing.T) {
	st := newTestStore(t)
	storetest.MustCreate(t, st, "s")
	release := holdWriter(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.AppendEvents(ctx, "s", storetest.TurnEvents(0, 1, false)) }()
	waitQueued(st, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendEvents after cancel = %v, want context.Canceled", err)
	}
	release()
	// A later append proves the writer skipped the withdrawn one.
	if err := st.AppendEvents(context.Background(), "s", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatalf("append after a withdrawn one: %v", err)
	}
}

func TestStore_closeDrainsAndRefuses(t *testing.T) {
	st := newTestStore(t)
	storetest.MustCreate(t, st, "s")
	release := holdWriter(t, st)
	done := make(chan error, 1)
	go func() { done <- st.AppendEvents(context.Background(), "s", storetest.TurnEvents(0, 1, false)) }()
	waitQueued(st, 1)
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	release()
	if err := <-done; err != nil {
		t.Errorf("append queued before Close: %v, want it committed", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := st.AppendEvents(context.Background(), "s", storetest.TurnEvents(8, 2, false)); !errors.Is(err, ErrClosed) {
		t.Errorf("append after Close = %v, want ErrClosed", err)
	}
	st2, err := Open(context.Background(), st.Path(), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if info, _ := st2.Session(context.Background(), "s"); info.LastSeq != 7 {
		t.Errorf("after reopen LastSeq = %d, want 7", info.LastSeq)
	}
}

// TestStore_appendManyEventsInChunks: an append of more events than one
// INSERT takes (insertRows) stores every one as given, in seq order, with
// its call id; and when a later chunk fails (its seq is taken by a row the
// test planted), nothing of the append is stored and the error names the
// conflict.
func TestStore_appendManyEventsInChunks(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	storetest.MustCreate(t, st, "s")
	n := 2*insertRows + 5
	evs := make([]core.Event, n)
	for i := range evs {
		evs[i] = core.Event{Type: core.EventToolCall, Seq: int64(i), Time: int64(1000 + i),
			Data: []byte(fmt.Sprintf(`{"turn":1,"step":1,"callId":"c%d","name":"note","arguments":"{}"}`, i))}
	}
	if err := st.AppendEvents(ctx, "s", evs); err != nil {
		t.Fatal(err)
	}
	log, err := st.LoadSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Events) != n {
		t.Fatalf("stored %d events, want %d", len(log.Events), n)
	}
	for i, e := range log.Events {
		if e.Seq != int64(i) || e.Time != int64(1000+i) || string(e.Data) != string(evs[i].Data) {
			t.Fatalf("event %d stored as seq %d time %d %s, want %s", i, e.Seq, e.Time, e.Data, evs[i].Data)
		}
	}
	var calls int
	if err := st.rdb.QueryRow("SELECT count(DISTINCT call_id) FROM events WHERE session_id = 's'").Scan(&calls); err != nil || calls != n {
		t.Fatalf("%d distinct call ids stored (%v), want %d", calls, err, n)
	}

	// A row at the second chunk's seq, written behind the writer's back:
	// the append's first chunk inserts, its second conflicts.
	storetest.MustCreate(t, st, "t")
	taken := int64(insertRows + 3)
	if err := st.write(ctx, func(w *wtx) error {
		_, err := w.tx.Exec(`INSERT INTO events (session_id, seq, type, time, data) VALUES ('t', ?, 'todo/write', 1, '{}')`, taken)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		evs[i].Seq = int64(i)
	}
	err = st.AppendEvents(ctx, "t", evs)
	if code := core.ErrorCode(err); code != core.CodeConflict {
		t.Fatalf("append over a taken seq: %v (code %q), want a conflict", err, code)
	}
	var stored int
	if err := st.rdb.QueryRow("SELECT count(*) FROM events WHERE session_id = 't'").Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("session t holds %d events after the refused append (%v), want only the planted one", stored, err)
	}
}
