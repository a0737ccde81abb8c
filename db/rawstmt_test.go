package db

import (
	"context"
	"strings"
	"testing"

	"prism/core"
	"prism/store/storetest"
)

// A durable step's statements bypass database/sql (rawstmt.go): their
// arguments must be converted as database/sql converts them — a Go int, a
// bool-as-int, a string type of its own — and one that cannot be must
// fail naming the argument, writing nothing.
func TestRawExecConvertsArgumentsAsDatabaseSQL(t *testing.T) {
	st := newTestStore(t)
	ctx := context.Background()
	storetest.MustCreate(t, st, "s")
	type kind string // a named string type, not a driver.Value
	w := st.w
	w.mu.Lock()
	err := w.raw.exec(w.raw.insEvents[1], "s", 0, kind(core.EventTodoWrite), int32(7), `{"todos":[]}`, b2i(true), nil, nil, "call-1")
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var typ, callID string
	var seq, at, ign int64
	if err := st.rdb.QueryRowContext(ctx, "SELECT seq, type, time, ignorable, call_id FROM events WHERE session_id = 's'").Scan(&seq, &typ, &at, &ign, &callID); err != nil {
		t.Fatal(err)
	}
	if seq != 0 || typ != core.EventTodoWrite || at != 7 || ign != 1 || callID != "call-1" {
		t.Fatalf("row = %d %q %d %d %q, want 0 %q 7 1 call-1", seq, typ, at, ign, callID, core.EventTodoWrite)
	}

	w.mu.Lock()
	err = w.raw.exec(w.raw.insEvents[1], "s", 1, core.EventTodoWrite, struct{}{}, "{}", 0, nil, nil, nil)
	w.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "argument $4") {
		t.Fatalf("exec with a struct argument: %v, want an error naming argument 4", err)
	}
	var n int
	if err := st.rdb.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE session_id = 's'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("events after the refused exec: %d (%v), want 1", n, err)
	}
}

// A driver statement run with too few or too many arguments is refused,
// as database/sql refuses it: SQLite would bind NULL to a missing one (an
// UPDATE of the session row would then match no row and say nothing).
func TestRawExecRefusesAWrongArgumentCount(t *testing.T) {
	st := newTestStore(t)
	storetest.MustCreate(t, st, "s")
	w := st.w
	w.mu.Lock()
	short := w.raw.exec(w.raw.insEvents[1], "s", int64(0), "x", int64(7), "{}", int64(0), nil, nil)
	long := w.raw.exec(w.raw.insEvents[1], "s", int64(0), "x", int64(7), "{}", int64(0), nil, nil, nil, nil)
	w.mu.Unlock()
	for _, err := range []error{short, long} {
		if err == nil || !strings.Contains(err.Error(), "expected 9 arguments") {
			t.Errorf("exec with a wrong argument count: %v, want an error saying 9 are expected", err)
		}
	}
	var n int
	if err := st.rdb.QueryRowContext(context.Background(), "SELECT count(*) FROM events").Scan(&n); err != nil || n != 0 {
		t.Fatalf("events after the refused execs: %d (%v), want 0", n, err)
	}
}
