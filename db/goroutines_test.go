package db

import (
	"context"
	"database/sql"
	"errors"
	"runtime/metrics"
	"testing"

	"prism/store/storetest"
)

// goroutinesCreated reads the runtime's count of goroutines created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestLoneAppendStartsNoGoroutine: a lone durable append commits on the
// caller's goroutine without database/sql starting a goroutine for the
// transaction or for a query in it (each start and end wakes an idle
// thread on the step's critical path).
func TestLoneAppendStartsNoGoroutine(t *testing.T) {
	st := newTestStore(t)
	ctx := context.Background()
	storetest.MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(0, 0, false)); err != nil {
		t.Fatal(err)
	}
	const n = 200
	commits0, created0 := st.w.commits.Load(), goroutinesCreated()
	for i := 1; i <= n; i++ {
		if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(int64(i)*8, i, false)); err != nil {
			t.Fatal(err)
		}
	}
	commits, created := st.w.commits.Load()-commits0, goroutinesCreated()-created0
	t.Logf("%d commits, %d goroutines created", commits, created)
	if commits < n {
		t.Fatalf("%d appends made %d commits, want one each", n, commits)
	}
	if created >= n/10 {
		t.Fatalf("%d lone appends started %d goroutines (%.2f per commit), want none per commit", n, created, float64(created)/float64(commits))
	}
}

// TestConnTxEndsCleanly: a statement Prepare made in a write transaction
// is closed when it ends (as a Tx closes its own), the ended transaction
// refuses statements, and a rolled-back transaction leaves the writer's
// connection outside any transaction (the next one begins).
func TestConnTxEndsCleanly(t *testing.T) {
	st := newTestStore(t)
	storetest.MustCreate(t, st, "s")
	var kept *sql.Stmt
	var ended *connTx
	boom := errors.New("boom")
	err := st.write(context.Background(), func(t *wtx) error {
		s, err := t.tx.Prepare("UPDATE sessions SET title = ? WHERE id = 's'")
		if err != nil {
			return err
		}
		if _, err := s.Exec("changed"); err != nil {
			return err
		}
		kept, ended = s, t.tx
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write = %v, want boom", err)
	}
	if _, err := kept.Exec("again"); err == nil {
		t.Fatal("a statement prepared in a rolled-back transaction still runs")
	}
	if _, err := ended.Exec("SELECT 1"); !errors.Is(err, sql.ErrTxDone) {
		t.Fatalf("Exec on an ended transaction = %v, want sql.ErrTxDone", err)
	}
	var title string
	if err := st.write(context.Background(), func(t *wtx) error {
		return t.tx.QueryRow("SELECT title FROM sessions WHERE id = 's'").Scan(&title)
	}); err != nil {
		t.Fatalf("the next transaction: %v", err)
	}
	if title == "changed" {
		t.Fatal("the rolled-back UPDATE is in the next transaction")
	}
}
