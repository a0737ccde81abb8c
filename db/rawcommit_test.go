package db

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"

	"prism/core"
	"prism/store"
	"prism/store/storetest"
)

// rawPathStores are two stores fed the same appends: one commits lone
// appends on the hot path (rawcommit.go), the other only through the
// general path (isolateAlways: tryBatch with a savepoint per request).
func rawPathStores(t *testing.T) (hot, general *Store) {
	hot = newTestStore(t)
	general = newTestStore(t)
	general.w.isolateAlways = true
	return hot, general
}

// tableRows reads every row of a query as strings, for comparison.
func tableRows(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = fmt.Sprintf("%v:%s", v.Valid, v.String)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

const (
	eventRowsSQL   = `SELECT session_id, seq, type, time, data, ignorable, surface_op, source_event_seqs, call_id FROM events ORDER BY session_id, seq`
	sessionRowsSQL = `SELECT * FROM sessions ORDER BY id`
)

// TestRawCommitWritesWhatTheGeneralPathWrites: turns appended one by one
// (plain appends and, as a session hands them over, checked appends with
// their facts) leave the same event rows, session rows and commit
// notifications whether the lone appends went through the hot path or the
// general one — and the hot path did run them.
func TestRawCommitWritesWhatTheGeneralPathWrites(t *testing.T) {
	ctx := context.Background()
	var committed [2][]string
	open := func(i int, isolated bool) *Store {
		st := newTestStore(t, func(o *Options) {
			o.Committed = func(c store.Commit) {
				committed[i] = append(committed[i], fmt.Sprintf("%s %d events created=%v", c.SessionID, len(c.Events), c.Created))
			}
		})
		st.w.isolateAlways = isolated
		return st
	}
	hot, general := open(0, false), open(1, true)
	for _, st := range []*Store{hot, general} {
		storetest.MustCreate(t, st, "s")
		storetest.MustCreate(t, st, "t")
		for turn := range 12 {
			evs := storetest.TurnEvents(int64(turn*8), turn+1, turn%3 == 2)
			if turn%2 == 0 {
				if err := st.AppendEvents(ctx, "s", evs); err != nil {
					t.Fatal(err)
				}
			} else {
				facts := make([]*core.EventFacts, len(evs))
				for i := range evs {
					f := core.FactsOf(&evs[i])
					facts[i] = &f
				}
				if err := st.AppendChecked(ctx, "s", evs, facts); err != nil {
					t.Fatal(err)
				}
			}
			// Another session between them: the cache holds both.
			if err := st.AppendEvents(ctx, "t", storetest.TurnEvents(int64(turn*8), turn+1, false)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := hot.w.rawCommits.Load(); n < 20 {
		t.Fatalf("the hot path ran %d of 24 appends' commits, want all but the first few (new sessions and titles go the general way)", n)
	}
	if n := general.w.rawCommits.Load(); n != 0 {
		t.Fatalf("the general store's hot path ran %d commits", n)
	}
	for _, q := range []string{eventRowsSQL, sessionRowsSQL} {
		a, b := tableRows(t, hot.rdb, q), tableRows(t, general.rdb, q)
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s:\nhot path %v\ngeneral  %v", q, a, b)
		}
	}
	if !reflect.DeepEqual(committed[0], committed[1]) || len(committed[0]) != 26 {
		t.Fatalf("commit notifications:\nhot path %v\ngeneral  %v", committed[0], committed[1])
	}
}

// TestRawCommitFailuresSurfaceAsBefore: a statement that fails, a COMMIT
// that fails (a deferred foreign key a trigger breaks) and a refused
// append give the hot path's store the same error as the general path's,
// write nothing of the failed append, and leave the session appendable
// at the same seq.
func TestRawCommitFailuresSurfaceAsBefore(t *testing.T) {
	ctx := context.Background()
	hot, general := rawPathStores(t)
	// The failures, installed by another connection after the hot path
	// prepared its statements (SQLite prepares them again): triggers on
	// events that refuse a statement or make the COMMIT fail.
	for _, st := range []*Store{hot, general} {
		storetest.MustCreate(t, st, "s")
		for turn := range 2 {
			if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(int64(turn*8), turn+1, false)); err != nil {
				t.Fatal(err)
			}
		}
		other, err := sql.Open("sqlite3", "file:"+st.Path()+"?_busy_timeout=5000&_foreign_keys=1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Exec(`
			CREATE TABLE boom_parent (id INTEGER PRIMARY KEY);
			CREATE TABLE boom_child (p INTEGER REFERENCES boom_parent (id) DEFERRABLE INITIALLY DEFERRED);
			CREATE TRIGGER boom_statement BEFORE INSERT ON events WHEN NEW.type = 'test/statement-fails'
				BEGIN SELECT RAISE(ABORT, 'statement refused'); END;
			CREATE TRIGGER boom_commit AFTER INSERT ON events WHEN NEW.type = 'test/commit-fails'
				BEGIN INSERT INTO boom_child VALUES (42); END;`); err != nil {
			t.Fatal(err)
		}
		other.Close()
	}
	if hot.w.rawCommits.Load() == 0 {
		t.Fatal("the hot path prepared nothing before the schema changed")
	}
	// The first append after another connection's commit reads the
	// session again (the general path); the next goes the hot path.
	for _, st := range []*Store{hot, general} {
		if err := st.AppendEvents(ctx, "s", []core.Event{storetest.Ev(16, core.EventStepStart, `{"turn":3,"step":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name     string
		events   []core.Event
		rawTries int64 // COMMITs the hot path runs for it
	}{
		{"statement fails", []core.Event{storetest.Ev(17, "test/statement-fails", `{}`)}, 0},
		{"commit fails", []core.Event{storetest.Ev(17, core.EventStepEnd, `{"turn":3,"step":1}`), storetest.Ev(18, "test/commit-fails", `{}`)}, 1},
		{"refused: seq gap", []core.Event{storetest.Ev(19, core.EventStepStart, `{"turn":3,"step":2}`)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var errs [2]string
			for i, st := range []*Store{hot, general} {
				beforeRaw := st.w.rawCommits.Load()
				before := tableRows(t, st.rdb, eventRowsSQL)
				beforeSess := tableRows(t, st.rdb, sessionRowsSQL)
				err := st.AppendEvents(ctx, "s", c.events)
				if err == nil {
					t.Fatalf("store %d: the append succeeded", i)
				}
				errs[i] = err.Error()
				if got := st.w.rawCommits.Load() - beforeRaw; i == 0 && got != c.rawTries {
					t.Fatalf("the hot path ran %d COMMITs for it, want %d", got, c.rawTries)
				}
				if after := tableRows(t, st.rdb, eventRowsSQL); !reflect.DeepEqual(before, after) {
					t.Fatalf("store %d: the failed append changed the events: %d rows before, %d after", i, len(before), len(after))
				}
				if after := tableRows(t, st.rdb, sessionRowsSQL); !reflect.DeepEqual(beforeSess, after) {
					t.Fatalf("store %d: the failed append changed the session row:\n%v\n%v", i, beforeSess, after)
				}
			}
			if errs[0] != errs[1] {
				t.Fatalf("errors differ:\nhot path %s\ngeneral  %s", errs[0], errs[1])
			}
			t.Logf("both: %s", errs[0])
		})
	}
	// Nothing was half written: the next good append takes seq 17, on the
	// hot path.
	beforeRaw := hot.w.rawCommits.Load()
	for _, st := range []*Store{hot, general} {
		if err := st.AppendEvents(ctx, "s", storetest.TurnEvents(17, 4, false)); err != nil {
			t.Fatal(err)
		}
	}
	if hot.w.rawCommits.Load() == beforeRaw {
		t.Fatal("the append after the failures did not take the hot path")
	}
	for _, q := range []string{eventRowsSQL, sessionRowsSQL} {
		if a, b := tableRows(t, hot.rdb, q), tableRows(t, general.rdb, q); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s after the failures:\nhot path %v\ngeneral  %v", q, a, b)
		}
	}
}
