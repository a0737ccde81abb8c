package db

import (
	"context"
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
