package pgstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"prism/store"
	"prism/store/storetest"
)

// TestFanoutDeliversEachDeletionOnce drives the deliverer's step with the
// orders in which its hints can arrive when it runs late: a session this
// node created and deleted before the deliverer saw either (its NOTIFY, then
// its own commits), and a deletion heard first through its own NOTIFY and
// then through its own commit. Each deletion is delivered exactly once.
func TestFanoutDeliversEachDeletionOnce(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t, Options{})
	storetest.MustImport(t, st, filepath.Join(storetest.Fixtures, "export/session-export.zip"))
	if _, err := st.DeleteSession(ctx, storetest.ParentID); err != nil {
		t.Fatal(err)
	}
	parent, child := storetest.ParentID, storetest.ChildID

	// A deliverer of its own (the store's runs beside it): same database,
	// its own cursors and callback.
	var got []store.Commit
	f := &fanout{st: &Store{opts: Options{Committed: func(c store.Commit) { got = append(got, c) }}, log: quietLogger(), pool: st.pool},
		seen: map[string]cursor{}, gone: map[string]bool{}}
	local := func(c store.Commit) hint { return hint{id: c.SessionID, local: &change{Commit: c, lastSeq: -1}} }
	deleted := func(cs []store.Commit) []string {
		var ids []string
		for _, c := range cs {
			if c.Deleted {
				ids = append(ids, c.SessionID)
			}
		}
		slices.Sort(ids)
		return ids
	}

	// Late: the import's NOTIFYs and commits and the deletion's commits
	// in one run.
	f.process(ctx, []hint{
		{id: parent, seq: 3}, {id: child, seq: 3},
		local(store.Commit{SessionID: parent, Created: true}), local(store.Commit{SessionID: child, Created: true}),
		local(store.Commit{SessionID: parent, Deleted: true}), local(store.Commit{SessionID: child, Deleted: true}),
	})
	if want := []string{parent, child}; !slices.Equal(deleted(got), sorted(want)) {
		t.Errorf("created and deleted in one run: deleted commits %v, want %v", deleted(got), want)
	}

	// The deletion's NOTIFY in one run, its commit in the next.
	got = nil
	f = &fanout{st: f.st, seen: map[string]cursor{parent: {seq: 3}}, gone: map[string]bool{}}
	f.process(ctx, []hint{{id: parent, deleted: true}})
	f.process(ctx, []hint{local(store.Commit{SessionID: parent, Deleted: true})})
	if want := []string{parent}; !slices.Equal(deleted(got), want) {
		t.Errorf("NOTIFY then commit: deleted commits %v, want %v once", deleted(got), want)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestFanoutCatchUpSurvivesADeadPooledConnection: a catch-up whose
// pooled connection died (its backend terminated, as a database restart
// does) is read again on a live one and delivers what it read: a
// catch-up given up is never asked again, so the session's commits would
// be lost to this node's pages. Here the dead connection fails at the
// query, which the catch-up always tried again; once in CI after an
// outage it failed only while its rows were read ("unexpected EOF"),
// which catchUp now tries again too (readAfter) — that order this test
// does not provoke.
func TestFanoutCatchUpSurvivesADeadPooledConnection(t *testing.T) {
	ctx := context.Background()
	st, url := newTestStore(t, Options{})
	storetest.MustImport(t, st, filepath.Join(storetest.Fixtures, "export/session-export.zip"))
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.HealthCheckPeriod = time.Hour
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var pid uint32
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	var got []store.Commit
	f := &fanout{st: &Store{opts: Options{Committed: func(c store.Commit) { got = append(got, c) }}, log: quietLogger(), pool: pool},
		seen: map[string]cursor{}, gone: map[string]bool{}}
	f.process(ctx, []hint{{id: storetest.ParentID, seq: 3}})
	if len(got) == 0 || !got[0].Created || got[0].SessionID != storetest.ParentID || len(got[0].Events) == 0 {
		t.Fatalf("after the pooled connection died, the catch-up delivered %+v; want the session created with its log", got)
	}
}
