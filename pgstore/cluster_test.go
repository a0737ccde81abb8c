package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"prism/core"
	"prism/store"
	"prism/store/storetest"
)

// feed collects what a node's Committed hook delivers, per session.
type feed struct {
	mu      sync.Mutex
	events  map[string][]core.Event
	deleted map[string]bool
	seen    map[string]int // commits per session
	more    chan struct{}
	t       testing.TB
}

func newFeed(t testing.TB) *feed {
	return &feed{events: map[string][]core.Event{}, deleted: map[string]bool{}, seen: map[string]int{}, more: make(chan struct{}, 1), t: t}
}

func (f *feed) committed(c store.Commit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	have := f.events[c.SessionID]
	if c.Replaced || c.Deleted {
		have = nil
	}
	f.deleted[c.SessionID] = c.Deleted
	for _, e := range c.Events {
		if want := int64(len(have)); e.Seq != want {
			f.t.Errorf("session %s: delivered seq %d, want %d (a gap or a double)", c.SessionID, e.Seq, want)
		}
		have = append(have, e)
	}
	f.events[c.SessionID] = have
	f.seen[c.SessionID]++
	select {
	case f.more <- struct{}{}:
	default:
	}
}

// waitDeleted waits until the node delivered session id's deletion.
func (f *feed) waitDeleted(t testing.TB, id string) {
	t.Helper()
	f.wait(t, func() bool { return f.deleted[id] }, "the deletion of session "+id)
}

// waitFor waits until session id's delivered log reaches n events.
func (f *feed) waitFor(t testing.TB, id string, n int) []core.Event {
	t.Helper()
	f.wait(t, func() bool { return len(f.events[id]) >= n }, fmt.Sprintf("%d events of session %s", n, id))
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events[id]
}

// wait waits until done (called under f.mu) holds, failing after 30 s.
func (f *feed) wait(t testing.TB, done func() bool, what string) {
	t.Helper()
	deadline := time.After(30 * time.Second) // a failure guard, not synchronization
	for {
		f.mu.Lock()
		ok := done()
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.more:
		case <-deadline:
			t.Fatalf("not delivered within 30 s: %s", what)
		}
	}
}

// twoNodes opens two stores ("nodes") on one fresh database.
func twoNodes(t *testing.T) (a, b *Store, fa, fb *feed, url string) {
	t.Helper()
	fa, fb = newFeed(t), newFeed(t)
	a, url = newTestStore(t, Options{Committed: fa.committed, Name: "A"})
	b = openAt(t, url, Options{Committed: fb.committed, Name: "B"})
	return a, b, fa, fb, url
}

// TestFanout: what node A commits reaches node B's hook, in order, once —
// created sessions, appends, a whole import, and a deletion.
func TestFanout(t *testing.T) {
	ctx := context.Background()
	a, b, _, fb, _ := twoNodes(t)
	storetest.MustCreate(t, a, "s")
	for i := 0; i < 5; i++ {
		if err := a.AppendEvents(ctx, "s", storetest.TurnEvents(int64(8*i), i+1, false)); err != nil {
			t.Fatal(err)
		}
	}
	got := fb.waitFor(t, "s", 40)
	l, _ := b.LoadSession(ctx, "s")
	if diff := fmt.Sprint(storetest.EventJSON(l.Events)); diff != fmt.Sprint(storetest.EventJSON(got)) {
		t.Errorf("B delivered a log that differs from the table")
	}
	res, err := a.ImportFile(ctx, storetest.Fixtures+"/basic/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fb.waitFor(t, res[0].SessionID, 39)
	// A deletion on A reaches B as a deleted commit (pages there say the
	// session is gone).
	if _, err := a.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	fb.waitDeleted(t, "s")
}

// TestConcurrentAppendsFromTwoNodes: two nodes appending to one session
// are serialised by the database: the log has no gap and no duplicate, and
// the loser of each race gets a conflict that says what happened.
func TestConcurrentAppendsFromTwoNodes(t *testing.T) {
	ctx := context.Background()
	a, b, _, _, _ := twoNodes(t)
	storetest.MustCreate(t, a, "s")
	const total = 200
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	var firstConflict atomic.Value
	for _, node := range []*Store{a, b, a, b} {
		wg.Go(func() {
			for {
				info, err := node.Session(ctx, "s")
				if err != nil {
					t.Error(err)
					return
				}
				next := info.LastSeq + 1
				if next >= total {
					return
				}
				e := storetest.Ev(next, core.EventTodoWrite, fmt.Sprintf(`{"todos":[{"content":"%d","status":"pending"}]}`, next))
				err = node.AppendEvents(ctx, "s", []core.Event{e})
				switch {
				case err == nil:
				case core.ErrorCode(err) == core.CodeConflict:
					conflicts.Add(1)
					firstConflict.CompareAndSwap(nil, err.Error())
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	l, err := a.LoadSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != total {
		t.Fatalf("%d events, want %d", len(l.Events), total)
	}
	for i, e := range l.Events {
		if e.Seq != int64(i) || string(e.Data) != fmt.Sprintf(`{"todos":[{"content":"%d","status":"pending"}]}`, i) {
			t.Fatalf("event %d: seq %d data %s", i, e.Seq, e.Data)
		}
	}
	t.Logf("%d conflicts while four appenders on two nodes wrote %d events", conflicts.Load(), total)
	if conflicts.Load() == 0 {
		t.Fatal("no append lost a race: the test did not exercise the conflict")
	}
	msg, _ := firstConflict.Load().(string)
	if !strings.Contains(msg, "another writer appended to this session first") {
		t.Errorf("conflict error %q does not say what happened", msg)
	}
}

// TestDatabaseRefusesGapsAndDuplicates: whatever a client does, the schema
// keeps seqs contiguous and unique.
func TestDatabaseRefusesGapsAndDuplicates(t *testing.T) {
	ctx := context.Background()
	a, _ := newTestStore(t, Options{})
	storetest.MustCreate(t, a, "s")
	if err := a.AppendEvents(ctx, "s", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"gap":       "INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 9, 'turn/start', 0, '{}')",
		"duplicate": "INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 7, 'turn/start', 0, '{}')",
		"negative":  "INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', -1, 'turn/start', 0, '{}')",
	} {
		_, err := a.pool.Exec(ctx, q)
		if err == nil {
			t.Errorf("%s: the database accepted %s", name, q)
		}
	}
	if _, err := a.pool.Exec(ctx, "INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 8, 'turn/start', 0, '{}'), ('s', 9, 'step/start', 0, '{}')"); err != nil {
		t.Errorf("a contiguous run in one statement was refused: %v", err)
	}
}

// TestListenReconnectCatchesUp: node B's LISTEN connection is terminated
// while A commits; B reconnects and delivers exactly what it missed.
func TestListenReconnectCatchesUp(t *testing.T) {
	ctx := context.Background()
	a, b, _, fb, _ := twoNodes(t)
	storetest.MustCreate(t, a, "s")
	if err := a.AppendEvents(ctx, "s", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	fb.waitFor(t, "s", 8)
	pid := b.ListenPID()
	// B stays disconnected until A has committed.
	gate, held := make(chan struct{}), make(chan struct{})
	hold := func() {
		select {
		case held <- struct{}{}:
		default:
		}
		<-gate
	}
	b.fan.holdReconnect.Store(&hold)
	var killed bool
	if err := a.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, killed, err)
	}
	<-held // B noticed and is not listening
	// Commits while B is not listening: more of s, a new session.
	for i := 1; i < 4; i++ {
		if err := a.AppendEvents(ctx, "s", storetest.TurnEvents(int64(8*i), i+1, false)); err != nil {
			t.Fatal(err)
		}
	}
	storetest.MustCreate(t, a, "new")
	if err := a.AppendEvents(ctx, "new", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	close(gate)
	fb.waitFor(t, "s", 32)
	fb.waitFor(t, "new", 8)
	if b.Reconnects() < 2 || b.ListenPID() == pid {
		t.Errorf("B's LISTEN connection was not re-established (connects %d, pid %d → %d)", b.Reconnects(), pid, b.ListenPID())
	}
	// And it goes on listening.
	if err := a.AppendEvents(ctx, "s", storetest.TurnEvents(32, 5, false)); err != nil {
		t.Fatal(err)
	}
	fb.waitFor(t, "s", 40)
}

// TestRepairLeavesRunningSessionsAlone: a node repairs only sessions whose
// lock is free; nodes repairing together repair each session once.
func TestRepairLeavesRunningSessionsAlone(t *testing.T) {
	ctx := context.Background()
	a, url := newTestStore(t, Options{Name: "A"})
	b := openAt(t, url, Options{Name: "B"})
	turn := storetest.TurnEvents(0, 1, false)
	storetest.MustCreate(t, a, "s") // A claims it
	if err := a.AppendEvents(ctx, "s", turn[:5]); err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, a, "starting") // A claims it too; its first event is not committed yet
	if running, err := b.Running(ctx, "s"); err != nil || !running {
		t.Fatalf("B sees s running = %v, %v; want true", running, err)
	}
	if got, err := b.RepairOpenTurns(ctx); err != nil || len(got) != 0 {
		t.Fatalf("B repaired or removed %v (%v) while A runs s and starts starting", got, err)
	}
	if _, err := b.Session(ctx, "starting"); err != nil {
		t.Fatalf("B removed the session A is starting: %v", err)
	}
	a.Close() // A is gone: its locks with it
	if running, _ := b.Running(ctx, "s"); running {
		t.Fatal("s still looks running after A closed")
	}
	nodes := []*Store{b, openAt(t, url, Options{Name: "C"}), openAt(t, url, Options{Name: "D"})}
	var wg sync.WaitGroup
	var repaired atomic.Int64
	for _, n := range nodes {
		wg.Go(func() {
			got, err := n.RepairOpenTurns(ctx)
			if err != nil {
				t.Error(err)
			}
			repaired.Add(int64(len(got)))
		})
	}
	wg.Wait()
	l, _ := b.LoadSession(ctx, "s")
	if repaired.Load() != 2 || l.Info.Status != core.StatusInterrupted {
		t.Fatalf("%d repairs, status %s; want exactly 2 (s repaired, starting removed) and s interrupted", repaired.Load(), l.Info.Status)
	}
	if _, err := b.Session(ctx, "starting"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("the session A created but never started, after A died: %v, want it removed", err)
	}
	storetest.CheckRepair(t, turn[:5], l.Events, map[string]int64{"call_1": 4}, true)
}

// TestForward: a follow-up, cancel or approval decision sent to node B for
// a session node A runs reaches A's handler; A's reply comes back, and its
// refusal with its code (and its reply); a session nobody runs is not found.
func TestForward(t *testing.T) {
	ctx := context.Background()
	a, b, _, _, _ := twoNodes(t)
	storetest.MustCreate(t, a, "s")
	got := make(chan Command, 4)
	handler := func(_ context.Context, c Command) (string, bool, error) {
		if c.SessionID != "s" {
			return "", false, nil
		}
		got <- c
		switch c.Body {
		case "bad":
			return "", true, core.Errorf(core.CodeInvalid, "send to session s: no thanks")
		case `{"approve":true}`:
			return `{"outcome":"allowed-once"}`, true, nil
		case `{"approve":false}`:
			return `{"outcome":"allowed-once","by":"someone else"}`, true, core.Errorf(core.CodeConflict, "already decided")
		}
		return "", true, nil
	}
	a.HandleCommands(handler)
	b.HandleCommands(func(context.Context, Command) (string, bool, error) { return "", false, nil })
	if reply, err := b.Forward(ctx, Command{SessionID: "s", Kind: CommandMessage, Body: "and now the tests"}); err != nil || reply != "" {
		t.Fatalf("Forward = %q, %v", reply, err)
	}
	if c := <-got; c.Kind != CommandMessage || c.Body != "and now the tests" {
		t.Errorf("A got %+v", c)
	}
	if _, err := b.Forward(ctx, Command{SessionID: "s", Kind: CommandCancel}); err != nil {
		t.Fatalf("Forward(cancel): %v", err)
	}
	if c := <-got; c.Kind != CommandCancel {
		t.Errorf("A got %+v", c)
	}
	_, err := b.Forward(ctx, Command{SessionID: "s", Kind: CommandMessage, Body: "bad"})
	<-got
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "no thanks") {
		t.Errorf("refused Forward = %v, want A's INVALID error", err)
	}
	reply, err := b.Forward(ctx, Command{SessionID: "s", Kind: CommandApproval, Body: `{"approve":true}`})
	if c := <-got; c.Kind != CommandApproval || err != nil || reply != `{"outcome":"allowed-once"}` {
		t.Errorf("Forward(approval) = %q, %v (A got %+v), want A's reply", reply, err, c)
	}
	reply, err = b.Forward(ctx, Command{SessionID: "s", Kind: CommandApproval, Body: `{"approve":false}`})
	<-got
	if core.ErrorCode(err) != core.CodeConflict || reply != `{"outcome":"allowed-once","by":"someone else"}` {
		t.Errorf("refused Forward(approval) = %q, %v, want A's reply beside its CONFLICT", reply, err)
	}
	if _, err := b.Forward(ctx, Command{SessionID: "s", Kind: "reboot"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("Forward(reboot) = %v, want INVALID", err)
	}
	storetest.MustCreate(t, a, "t")
	a.own.release("t")
	if _, err := b.Forward(ctx, Command{SessionID: "t", Kind: CommandCancel}); core.ErrorCode(err) != core.CodeNotFound || !errors.Is(err, errNoOwner) {
		t.Errorf("Forward to a session nobody runs = %v, want NOT_FOUND", err)
	}
	var left int64
	a.pool.QueryRow(ctx, "SELECT count(*) FROM session_commands").Scan(&left)
	if left != 0 {
		t.Errorf("%d command rows left behind", left)
	}
}

// TestIfEmptyOnce: nodes starting together on an empty database run the
// first-start function once.
func TestIfEmptyOnce(t *testing.T) {
	ctx := context.Background()
	a, url := newTestStore(t, Options{})
	nodes := []*Store{a, openAt(t, url, Options{}), openAt(t, url, Options{})}
	var ran atomic.Int64
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			_, err := n.IfEmpty(ctx, func(ctx context.Context) error {
				ran.Add(1)
				return n.CreateSession(ctx, storetest.Header(fmt.Sprint("demo", i)))
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ran.Load() != 1 {
		t.Errorf("the first-start function ran %d times, want 1", ran.Load())
	}
}
