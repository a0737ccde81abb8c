package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/internal/pgcluster"
	"prism/store"
	"prism/store/storetest"
)

// lockPID returns the backend pid of st's lock connection.
func lockPID(t *testing.T, st *Store) uint32 {
	t.Helper()
	st.own.mu.Lock()
	defer st.own.mu.Unlock()
	if st.own.conn == nil {
		t.Fatal("the store holds no lock connection")
	}
	return st.own.conn.PgConn().PID()
}

// terminate ends a backend from another node's pool, as a lost connection.
func terminate(t *testing.T, via *Store, pid uint32) {
	t.Helper()
	var ok bool
	if err := via.pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
}

// waitPasses waits until st's sweep completed n more passes than it had.
func waitPasses(t *testing.T, st *Store, n int64) {
	t.Helper()
	want := st.orph.passes.Load() + n
	deadline := time.Now().Add(30 * time.Second) // a failure guard, not synchronization
	for st.orph.passes.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the sweep did not complete %d passes within 30 s", n)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter the sweep's own ticker moves
	}
}

// turnEnd decodes the last event of a log, which must be a turn/end.
func turnEnd(t *testing.T, events []core.Event) core.TurnEnd {
	t.Helper()
	last := events[len(events)-1]
	var d core.TurnEnd
	if last.Type != core.EventTurnEnd || json.Unmarshal(last.Data, &d) != nil {
		t.Fatalf("last event %s %s, want a turn/end", last.Type, last.Data)
	}
	return d
}

// TestSweepRepairsSessionsWhoseNodeIsGone: node A runs a session with an
// open turn, node B sweeps. While A holds the session's lock, however
// long B looks, B leaves it alone; A's lock connection dying and A taking
// its lock again (its own sweep's check) changes nothing. Once A is gone
// for good (its lock connection ends and nothing takes it again), B
// repairs the session within 10 s — interrupted, saying the node stopped
// — through the ordinary commit path, so B's own feed (its pages) and a
// third node's see the closers; and a session A created but never started
// is removed.
func TestSweepRepairsSessionsWhoseNodeIsGone(t *testing.T) {
	ctx := context.Background()
	fb, fc := newFeed(t), newFeed(t)
	a, url := newTestStore(t, Options{Name: "A"}) // no sweep: what a dead node does
	b := openAt(t, url, Options{Name: "B", Committed: fb.committed, RepairInterval: 100 * time.Millisecond})
	openAt(t, url, Options{Name: "C", Committed: fc.committed}) // a node that only watches
	turn := storetest.TurnEvents(0, 1, false)
	storetest.MustCreate(t, a, "s")
	if err := a.AppendEvents(ctx, "s", turn[:5]); err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, a, "starting")
	fb.waitFor(t, "s", 5)

	// An alive owner, however slow, is never repaired.
	waitPasses(t, b, 5)
	if info, _ := b.Session(ctx, "s"); info.Status != core.StatusRunning {
		t.Fatalf("B touched the session A runs: status %s", info.Status)
	}
	// A's lock connection dies; A's check takes the lock again before B's
	// wait is over.
	terminate(t, b, lockPID(t, a))
	if err := a.own.keep(ctx); err != nil {
		t.Fatalf("A took its locks again: %v", err)
	}
	if running, err := b.Running(ctx, "s"); err != nil || !running {
		t.Fatalf("after A's check, s running = %v, %v; want A's lock held again", running, err)
	}
	waitPasses(t, b, 5)
	if info, _ := b.Session(ctx, "s"); info.Status != core.StatusRunning {
		t.Fatalf("B repaired the session A still runs: status %s", info.Status)
	}

	// A dies: its lock connection ends and nothing takes the lock again.
	died := time.Now()
	terminate(t, b, lockPID(t, a))
	got := fb.waitFor(t, "s", 5+len(store.Closers(turn[:5])))
	if took := time.Since(died); took > 10*time.Second {
		t.Errorf("repaired %s after the node died, want within 10 s", took)
	}
	end := turnEnd(t, got)
	if end.Reason.Kind != core.TurnInterrupted || end.Reason.Reason != nil {
		t.Errorf("repair's turn/end = %+v, want plain dsh {kind: interrupted}", end)
	}
	if why := repairNote(t, b, "s", got); why.Kind != core.InterruptNodeLost || !strings.Contains(why.Reason, "node running it stopped") {
		t.Errorf("repair note's reason = %+v, want the node is gone", why)
	}
	checkClosers(t, turn[:5], got)
	fc.waitFor(t, "s", len(got)) // another node's pages see it too
	if info, _ := b.Session(ctx, "s"); info.Status != core.StatusInterrupted {
		t.Errorf("status %s after the repair, want interrupted", info.Status)
	}
	// Once: more passes append nothing.
	waitPasses(t, b, 3)
	if _, err := b.Session(ctx, "starting"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("the session A created but never started, after A died: %v, want it removed", err)
	}
	if l, _ := b.LoadSession(ctx, "s"); len(l.Events) != len(got) {
		t.Errorf("%d events after more sweeps, want %d (one repair)", len(l.Events), len(got))
	}
}

// TestOutageRepairsFailedSessions: the database crashes under a node that
// runs two sessions. The one whose append fails refuses further appends
// (as its core.Session does), and once the database is back the node
// repairs it itself, saying the store was unreachable. The other, which
// appended nothing during the outage, is this node's still: it takes the
// session's lock again and appends on. During the outage, creating a
// session fails with a store-unavailable error that says so and when to
// try again. An outage that ends while nothing appends fails nothing.
func TestOutageRepairsFailedSessions(t *testing.T) {
	ctx := context.Background()
	pg, err := pgcluster.Start(ctx, pgcluster.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	url, err := pg.CreateDatabase(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}
	fa := newFeed(t)
	a := openAt(t, url, Options{Name: "A", Committed: fa.committed, RepairInterval: 100 * time.Millisecond})
	z := openAt(t, url, Options{Name: "Z"})
	storetest.MustCreate(t, z, "z") // Z's lock connection is open
	turn := storetest.TurnEvents(0, 1, false)
	for _, id := range []string{"failed", "alive"} {
		storetest.MustCreate(t, a, id)
		if err := a.AppendEvents(ctx, id, turn[:5]); err != nil {
			t.Fatal(err)
		}
	}

	pg.Crash()
	err = a.AppendEvents(ctx, "failed", turn[5:6])
	var unavailable *store.UnavailableError
	if !asUnavailable(err, &unavailable) {
		t.Fatalf("append while the database is down = %v, want a *store.UnavailableError", err)
	}
	err = a.CreateSession(ctx, storetest.Header("new"))
	if !asUnavailable(err, &unavailable) || unavailable.RetryAfter() <= 0 || core.ErrorCode(err) != core.CodeUnavailable ||
		!strings.Contains(unavailable.PublicMessage(), "unreachable") || strings.Contains(unavailable.PublicMessage(), "127.0.0.1") {
		t.Fatalf("create while the database is down = %v, want UNAVAILABLE saying the store is unreachable, with a retry delay and no address", err)
	}
	if a.Holds("failed") || !a.Holds("alive") {
		t.Errorf("holds failed=%v alive=%v; want the failed session given up, the other kept", a.Holds("failed"), a.Holds("alive"))
	}
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	got := fa.waitFor(t, "failed", 5+len(store.Closers(turn[:5])))
	end := turnEnd(t, got)
	if end.Reason.Kind != core.TurnInterrupted || end.Reason.Reason != nil {
		t.Errorf("repair's turn/end = %+v, want plain dsh {kind: interrupted}", end)
	}
	if why := repairNote(t, a, "failed", got); why.Kind != core.InterruptStoreUnreachable || why.Reason != "the store was unreachable" {
		t.Errorf("repair note's reason = %+v, want the store was unreachable", why)
	}
	checkClosers(t, turn[:5], got)
	if info, err := a.Session(ctx, "failed"); err != nil || info.Status != core.StatusInterrupted {
		t.Errorf("failed session: %+v %v, want interrupted", info, err)
	}
	// The session that appended nothing during the outage is still A's.
	waitPasses(t, a, 3)
	if running, err := a.Running(ctx, "alive"); err != nil || !running {
		t.Fatalf("alive session's lock after the outage: %v %v, want A's again", running, err)
	}
	if err := a.AppendEvents(ctx, "alive", turn[5:]); err != nil {
		t.Fatalf("the alive session appends on after the outage: %v", err)
	}
	if info, _ := a.Session(ctx, "alive"); info.Status == core.StatusInterrupted {
		t.Error("the alive session was repaired")
	}
	storetest.MustCreate(t, a, "new")

	// An outage that is over while nothing appended fails no append: the
	// writer's idle connection died with the server, and its next commit
	// runs on a new one.
	pg.Crash()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, "new", turn); err != nil {
		t.Fatalf("the first append after the database came back: %v", err)
	}
	pg.Crash()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// A node without a sweep (nothing checked its lock connection) claims
	// a new session on a fresh connection too.
	if err := z.CreateSession(ctx, storetest.Header("newer")); err != nil {
		t.Fatalf("the first session created after the database came back: %v", err)
	}
	if !a.Holds("new") {
		t.Error("A gave up a session whose appends never failed")
	}
}

// asUnavailable reports whether err's chain holds a *store.UnavailableError.
func asUnavailable(err error, target **store.UnavailableError) bool {
	return err != nil && errors.As(err, target)
}

// checkClosers holds a repaired log to its prefix before and crash
// repair's closers with reason why.
// repairNote returns the reason of session id's one "repair" note, which
// must sit on the closing turn/end of the repaired log got.
func repairNote(t *testing.T, st *Store, id string, got []core.Event) core.CancelCause {
	t.Helper()
	ns, err := st.Notes(context.Background(), id, notes.Query{Kind: notes.KindRepair})
	if err != nil || len(ns) != 1 {
		t.Fatalf("repair notes of %s: %+v, %v; want one", id, ns, err)
	}
	if end := got[len(got)-1]; ns[0].AtSeq != end.Seq || end.Type != core.EventTurnEnd || ns[0].CallID != "" {
		t.Errorf("repair note at seq %d on call %q, want on the closing turn/end (seq %d, %s)", ns[0].AtSeq, ns[0].CallID, end.Seq, end.Type)
	}
	why, ok := notes.RepairReason(ns, got[len(got)-1].Seq, got[len(got)-1].Seq)
	if !ok {
		t.Fatalf("repair note %s has no reason: %s", ns[0].ID, ns[0].Data)
	}
	return why
}

func checkClosers(t *testing.T, before, after []core.Event) {
	t.Helper()
	want := core.InterruptedTurnClosers(before)
	if len(want) == 0 || len(after) != len(before)+len(want) {
		t.Fatalf("%d events after the repair of %d, want %d closers", len(after), len(before), len(want))
	}
	if got, want := storetest.EventJSON(after), storetest.EventJSON(append(slices.Clone(before), want...)); !slices.Equal(got, want) {
		t.Errorf("repaired log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
