package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"prism/core"
	"prism/core/notes"
	"prism/store"
	"prism/store/storetest"
)

// TestCreateLosingARaceAnswersAsTheSequentialOne: a create whose session
// id another transaction inserted first and commits while the create's
// insert waits for it (a unique violation on the sessions key) answers as
// the same create of a stored id does — CreateFork SESSION_ALREADY_EXISTS
// naming the id, CreateSession "it already exists", SyncLog the stored
// session reconciled, an import too — never a generic CONFLICT. The other transaction is
// held open on a connection of the test's; the create runs until
// PostgreSQL shows its backend blocked by that transaction
// (pg_blocking_pids), then the other commits.
func TestCreateLosingARaceAnswersAsTheSequentialOne(t *testing.T) {
	ctx := context.Background()
	st, url := newTestStore(t, Options{})
	src := core.SessionHeader{ID: "race-src", CreatedAt: 1764500000000}
	if err := st.CreateSession(ctx, src); err != nil {
		t.Fatal(err)
	}
	events := append(storetest.TurnEvents(0, 1, false), storetest.TurnEvents(8, 2, false)...)
	if err := st.AppendEvents(ctx, src.ID, events); err != nil {
		t.Fatal(err)
	}
	turn := 1
	n, err := core.ForkPrefix(src.ID, events, core.ForkBoundary{AtTurn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	forkNote := func(id string) notes.Input {
		at := int64(n) - 1
		data, err := json.Marshal(notes.ForkData{Session: id, SeedLength: int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		return notes.Input{Session: src.ID, Kind: notes.KindFork, AtSeq: &at, Data: data}
	}

	zero := int64(0)
	imported := storetest.Header("race-imp-00000")
	imported.DelegationDepth = &zero
	file := storetest.MultiSessionJSONL(t, "race-imp", 1, nil)
	cases := []struct {
		id string
		// header is the other transaction's row (default: id, created at 1764500002000).
		header *core.SessionHeader
		// create is the racing create; check its outcome.
		create func(h core.SessionHeader) error
		check  func(t *testing.T, err error)
	}{
		{id: imported.ID, header: &imported, create: func(core.SessionHeader) error {
			res, err := st.Import(ctx, "race.jsonl", bytes.NewReader(file), int64(len(file)))
			if err == nil && (len(res) != 1 || res[0].Outcome != store.ImportExtended || res[0].Added != len(storetest.TurnEvents(0, 1, false))) {
				t.Errorf("an import losing the race = %+v; want its session extended with every event", res)
			}
			return err
		}, check: func(t *testing.T, err error) {
			if err != nil {
				t.Errorf("an import losing the race = %v, want the stored session extended", err)
			}
		}},
		{id: "race-fork", create: func(h core.SessionHeader) error {
			h, seed, err := core.ForkSeed(core.SessionHeader{ID: h.ID, CreatedAt: 1764500001000, ParentSession: src.ID}, events, n, 1764500001000)
			if err != nil {
				return err
			}
			return st.CreateFork(ctx, h, seed, forkNote(h.ID))
		}, check: func(t *testing.T, err error) {
			want := `cannot fork session "race-src" into "race-fork": a session with that id already exists`
			if core.ErrorCode(err) != core.CodeSessionAlreadyExists || err.Error() != want {
				t.Errorf("CreateFork losing the race = %q (%s), want %q (%s)", err, core.ErrorCode(err), want, core.CodeSessionAlreadyExists)
			}
			if ns, _ := st.Notes(ctx, src.ID, notes.Query{Kind: notes.KindFork}); len(ns) != 0 {
				t.Errorf("the losing fork left %d fork notes on its source", len(ns))
			}
		}},
		{id: "race-create", create: func(h core.SessionHeader) error {
			return st.CreateSession(ctx, h)
		}, check: func(t *testing.T, err error) {
			want := "create session race-create: it already exists"
			if core.ErrorCode(err) != core.CodeConflict || err.Error() != want {
				t.Errorf("CreateSession losing the race = %q (%s), want %q (%s)", err, core.ErrorCode(err), want, core.CodeConflict)
			}
		}},
		{id: "race-sync", create: func(h core.SessionHeader) error {
			outcome, added, err := st.SyncLog(ctx, h, storetest.TurnEvents(0, 1, false), store.SourceWatch, false)
			if err == nil && (outcome != store.ImportExtended || added != len(storetest.TurnEvents(0, 1, false))) {
				t.Errorf("SyncLog losing the race = %s, %d added; want %s with every event (the stored empty session extended)", outcome, added, store.ImportExtended)
			}
			return err
		}, check: func(t *testing.T, err error) {
			if err != nil {
				t.Errorf("SyncLog losing the race = %v, want the stored session extended", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			h := core.SessionHeader{ID: c.id, CreatedAt: 1764500002000}
			if c.header != nil {
				h = *c.header
			}
			other, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(ctx)
			tx, err := other.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
			hj, err := store.HeaderJSON(h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, header, source, created_at, updated_at, summary_version) VALUES ($1, $2, 'watch', $3, $3, $4)`,
				h.ID, hj, h.CreatedAt, core.SummaryVersion); err != nil {
				t.Fatal(err)
			}
			var pid int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.create(h) }()
			waitBlockedBy(t, st.pool, pid, done)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			c.check(t, <-done)
		})
	}
}

// waitBlockedBy returns once some backend waits for a lock the backend
// pid holds, as PostgreSQL reports it (pg_blocking_pids); it fails the
// test if the create ends first or within a minute nothing waits.
func waitBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int32, done <-chan error) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		var blocked bool
		if err := pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))", pid).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		if blocked {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the create ended before it waited for the other transaction: %v", err)
		case <-deadline:
			t.Fatal("no backend waited for the other transaction within a minute")
		case <-tick.C:
		}
	}
}

// TestRefusedCreateKeepsTheNodesClaim: a create or fork refused because
// this node already runs the id gives no lock back — the running session
// stays this node's.
func TestRefusedCreateKeepsTheNodesClaim(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	h := core.SessionHeader{ID: "claimed", CreatedAt: 1764500000000}
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, h); core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second CreateSession = %v, want a conflict: it already exists", err)
	}
	if !st.own.holds(h.ID) {
		t.Errorf("after a refused second create the node no longer holds session %s's lock", h.ID)
	}
}

// TestForkIntoAnotherNodesSession: a fork into an id another node runs
// (its claim is held there) is SESSION_ALREADY_EXISTS, not the claim's
// CONFLICT.
func TestForkIntoAnotherNodesSession(t *testing.T) {
	ctx := context.Background()
	a, url := newTestStore(t, Options{})
	b := openAt(t, url, Options{})
	src := core.SessionHeader{ID: "node-src", CreatedAt: 1764500000000}
	events := storetest.TurnEvents(0, 1, false)
	if err := a.CreateSession(ctx, src); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, src.ID, events); err != nil {
		t.Fatal(err)
	}
	taken := core.SessionHeader{ID: "node-taken", CreatedAt: 1764500000000}
	if err := a.CreateSession(ctx, taken); err != nil {
		t.Fatal(err)
	}
	turn := 1
	n, err := core.ForkPrefix(src.ID, events, core.ForkBoundary{AtTurn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	h, seed, err := core.ForkSeed(core.SessionHeader{ID: taken.ID, CreatedAt: 1764500001000, ParentSession: src.ID}, events, n, 1764500001000)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(n) - 1
	data, _ := json.Marshal(notes.ForkData{Session: h.ID, SeedLength: int64(n)})
	err = b.CreateFork(ctx, h, seed, notes.Input{Session: src.ID, Kind: notes.KindFork, AtSeq: &at, Data: data})
	if core.ErrorCode(err) != core.CodeSessionAlreadyExists || !strings.Contains(err.Error(), `"node-taken"`) {
		t.Errorf("a fork into a session another node runs = %v (%s), want %s naming the id", err, core.ErrorCode(err), core.CodeSessionAlreadyExists)
	}
}
