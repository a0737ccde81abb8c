package pgstore

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"prism/internal/pgtest"
	"prism/sources/dsh"
	"prism/store"
	"prism/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openAt opens a store on the database at url, closed when the test ends.
func openAt(t testing.TB, url string, o Options) *Store {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	st, err := Open(context.Background(), url, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newTestStore opens a store on a fresh database.
func newTestStore(t testing.TB, o Options) (*Store, string) {
	t.Helper()
	url := pgtest.DB(t)
	return openAt(t, url, o), url
}

// pgEngine runs the store contract on a PostgreSQL database.
var pgEngine = storetest.Engine{
	Name: "postgres",
	Open: func(t testing.TB, o storetest.Options) (storetest.Store, func(storetest.Options) storetest.Store) {
		url := pgtest.DB(t)
		open := func(o storetest.Options) storetest.Store {
			return openAt(t, url, Options{Committed: o.Committed, Now: o.Now, Logger: o.Logger, MaxImports: o.MaxImports})
		}
		return open(o), open
	},
	Exec: func(t testing.TB, st storetest.Store, sql string) {
		t.Helper()
		if _, err := st.(*Store).pool.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	},
	Count: func(t testing.TB, st storetest.Store, sql string) int64 {
		t.Helper()
		var n int64
		if err := st.(*Store).pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	},
	Commits: func(st storetest.Store) int64 { return st.(*Store).w.commits.Load() },
	// The fan-out keeps each session's commits in order, not the order
	// across sessions: a run of hints delivers a later session's own
	// creation at once and an earlier session's catch-up read after it.
	Delivered: func(st storetest.Store) { st.(*Store).fan.flush() },
	Strings: func(t testing.TB, st storetest.Store, q string) []string {
		t.Helper()
		rows, err := st.(*Store).pool.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	},
	ImportLogs: func(st storetest.Store, file string, logs []*dsh.Log, o store.ImportOptions) ([]store.ImportResult, error) {
		return st.(*Store).importLogs(context.Background(), file, logs, o)
	},
	Unindex: func(t testing.TB, st storetest.Store) {
		t.Helper()
		for _, q := range []string{"DROP TABLE search_docs", "DROP TABLE search_sessions", "DELETE FROM migrations WHERE name = '0005_search.sql'",
			"DELETE FROM migrations WHERE name = '0015_search_snippets.sql'", "DELETE FROM migrations WHERE name = '0016_search_cards.sql'",
			"DELETE FROM migrations WHERE name = '0017_search_sections.sql'"} {
			if _, err := st.(*Store).pool.Exec(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	},
	WatchMarks: func(st storetest.Store) int { return st.(*Store).marks.Len() },
}

// TestContract runs the store contract (package storetest) on PostgreSQL.
func TestContract(t *testing.T) { storetest.Run(t, pgEngine) }
