package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"prism/core"
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

func header(id string) core.SessionHeader {
	return core.SessionHeader{ID: id, CreatedAt: 1764500000000, Cwd: "/w"}
}

func mustCreate(t testing.TB, st *Store, id string) {
	t.Helper()
	if err := st.CreateSession(context.Background(), header(id)); err != nil {
		t.Fatalf("CreateSession(%s): %v", id, err)
	}
}

func ev(seq int64, typ, data string) core.Event {
	e := core.Event{Type: typ, Seq: seq, Time: 1764500000000 + seq, Data: json.RawMessage(data)}
	if core.IsSurfaceType(typ) {
		e.SurfaceOp = core.AppendOp()
	}
	return e
}

// turnEvents returns one complete turn (user message, assistant message
// with one tool call, the call and its result) starting at seq.
func turnEvents(seq int64, turn int, isError bool) []core.Event {
	call := fmt.Sprintf("call_%d", turn)
	out := []core.Event{
		ev(seq, core.EventTurnStart, fmt.Sprintf(`{"turn":%d}`, turn)),
		ev(seq+1, core.EventStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, turn)),
		ev(seq+2, core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":"do   thing\n%d"}],"source":{"kind":"user"}}`, turn, turn)),
		ev(seq+3, core.EventAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"tool-call","id":%q,"name":"note","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}}`, turn, turn, call)),
		ev(seq+4, core.EventToolCall, fmt.Sprintf(`{"turn":%d,"step":1,"callId":%q,"name":"note","arguments":"{}"}`, turn, call)),
		ev(seq+5, core.EventToolResult, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"r%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":"ok"}],"isError":%t}],"source":{"kind":"tool","callId":%q}}}`, turn, turn, call, isError, call)),
		ev(seq+6, core.EventStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn)),
		ev(seq+7, core.EventTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn)),
	}
	out[5].SourceEventSeqs = []int64{seq + 4}
	return out
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
	for len(st.w.reqs) < n {
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

func TestStore_AppendEvents(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	mustCreate(t, st, "s")
	if err := st.CreateSession(ctx, header("s")); core.ErrorCode(err) != core.CodeConflict {
		t.Errorf("CreateSession(duplicate) = %v, want %s", err, core.CodeConflict)
	}
	if err := st.AppendEvents(ctx, "s", turnEvents(0, 1, false)); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	tests := []struct {
		name   string
		id     string
		events []core.Event
		code   string
	}{
		{"seq gap", "s", []core.Event{ev(9, core.EventTurnStart, `{"turn":2}`)}, core.CodeConflict},
		{"seq repeat", "s", []core.Event{ev(7, core.EventTurnStart, `{"turn":2}`)}, core.CodeConflict},
		{"gap inside batch", "s", []core.Event{ev(8, core.EventTurnStart, `{"turn":2}`), ev(10, core.EventStepStart, `{}`)}, core.CodeConflict},
		{"missing session", "nope", []core.Event{ev(0, core.EventTurnStart, `{"turn":1}`)}, core.CodeNotFound},
		{"not JSON", "s", []core.Event{ev(8, core.EventTurnStart, `{"turn":`)}, core.CodeInvalid},
		{"negative zero", "s", []core.Event{ev(8, core.EventTurnStart, `{"turn":-0}`)}, core.CodeInvalid},
		{"surfaceOp on a log-only type", "s", []core.Event{{Type: core.EventTurnStart, Seq: 8, Data: []byte(`{}`), SurfaceOp: core.AppendOp()}}, core.CodeInvalid},
		{"surface type without surfaceOp", "s", []core.Event{{Type: core.EventUserMessage, Seq: 8, Data: []byte(`{}`)}}, core.CodeInvalid},
		{"source seq from the future", "s", []core.Event{{Type: core.EventToolResult, Seq: 8, Data: []byte(`{}`), SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{8}}}, core.CodeInvalid},
		{"no type", "s", []core.Event{{Seq: 8, Data: []byte(`{}`)}}, core.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := st.AppendEvents(ctx, tt.id, tt.events)
			if got := core.ErrorCode(err); got != tt.code {
				t.Fatalf("AppendEvents = %v (code %s), want code %s", err, got, tt.code)
			}
			info, _ := st.Session(ctx, "s")
			if info.LastSeq != 7 {
				t.Errorf("after a rejected append LastSeq = %d, want 7 (nothing left behind)", info.LastSeq)
			}
		})
	}
	// Whitespace in data is compacted, so exports re-import byte for byte.
	if err := st.AppendEvents(ctx, "s", []core.Event{ev(8, core.EventTurnStart, "{ \"turn\" : 2 }")}); err != nil {
		t.Fatal(err)
	}
	evs, _ := st.EventsAfter(ctx, "s", 7)
	if len(evs) != 1 || string(evs[0].Data) != `{"turn":2}` {
		t.Errorf("stored data = %s, want compact", evs[0].Data)
	}
}

func TestStore_groupCommitIsolatesBadRequests(t *testing.T) {
	for _, isolated := range []bool{false, true} {
		t.Run(fmt.Sprintf("savepoints=%v", isolated), func(t *testing.T) {
			ctx := context.Background()
			st := newTestStore(t)
			st.w.isolateAlways = isolated
			for i := 0; i < 4; i++ {
				mustCreate(t, st, fmt.Sprint("s", i))
			}
			before := st.w.commits.Load()
			release := holdWriter(t, st)
			errs := make([]error, 6)
			var wg sync.WaitGroup
			reqs := [][]core.Event{
				turnEvents(0, 1, false),
				{ev(3, core.EventTurnStart, `{"turn":1}`)}, // gap: rejected
				turnEvents(0, 1, true),
				{ev(0, core.EventTurnStart, `{"turn":`)}, // bad JSON: rejected
				turnEvents(0, 1, false),
				turnEvents(8, 2, false), // continues request 4 only if it lands after it
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
	mustCreate(t, st, "s")
	release := holdWriter(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.AppendEvents(ctx, "s", turnEvents(0, 1, false)) }()
	waitQueued(st, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendEvents after cancel = %v, want context.Canceled", err)
	}
	release()
	// A later append proves the writer skipped the withdrawn one.
	if err := st.AppendEvents(context.Background(), "s", turnEvents(0, 1, false)); err != nil {
		t.Fatalf("append after a withdrawn one: %v", err)
	}
}

func TestStore_closeDrainsAndRefuses(t *testing.T) {
	st := newTestStore(t)
	mustCreate(t, st, "s")
	release := holdWriter(t, st)
	done := make(chan error, 1)
	go func() { done <- st.AppendEvents(context.Background(), "s", turnEvents(0, 1, false)) }()
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
	if err := st.AppendEvents(context.Background(), "s", turnEvents(8, 2, false)); !errors.Is(err, ErrClosed) {
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

func TestStore_concurrentAppends(t *testing.T) {
	const goroutines, appends = 16, 1000
	ctx := context.Background()
	st := newTestStore(t)
	for g := 0; g < goroutines; g++ {
		mustCreate(t, st, fmt.Sprint("s", g))
	}
	before := st.w.commits.Load()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("s", g)
			for i := 0; i < appends; i++ {
				e := ev(int64(i), core.EventTodoWrite, fmt.Sprintf(`{"todos":[{"content":"g%d i%d","status":"pending"}]}`, g, i))
				if err := st.AppendEvents(ctx, id, []core.Event{e}); err != nil {
					errs <- fmt.Errorf("%s seq %d: %w", id, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g := 0; g < goroutines; g++ {
		l, err := st.LoadSession(ctx, fmt.Sprint("s", g))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Events) != appends {
			t.Fatalf("session s%d has %d events, want %d", g, len(l.Events), appends)
		}
		for i, e := range l.Events {
			want := fmt.Sprintf(`{"todos":[{"content":"g%d i%d","status":"pending"}]}`, g, i)
			if e.Seq != int64(i) || string(e.Data) != want {
				t.Fatalf("session s%d event %d = seq %d %s, want seq %d %s", g, i, e.Seq, e.Data, i, want)
			}
		}
	}
	commits := st.w.commits.Load() - before
	t.Logf("%d appends in %d commits (%.1f per commit)", goroutines*appends, commits, float64(goroutines*appends)/float64(commits))
	if commits >= goroutines*appends {
		t.Errorf("%d commits for %d appends: nothing was group-committed", commits, goroutines*appends)
	}
}
