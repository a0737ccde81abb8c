package db

import (
	"context"
	"path/filepath"
	"testing"

	"prism/sources/dsh"
	"prism/store"
	"prism/store/storetest"
)

// sqliteEngine runs the store contract on a SQLite file.
var sqliteEngine = storetest.Engine{
	Name: "sqlite",
	Open: func(t testing.TB, o storetest.Options) (storetest.Store, func(storetest.Options) storetest.Store) {
		path := filepath.Join(t.TempDir(), "prism.db")
		open := func(o storetest.Options) storetest.Store {
			if o.Logger == nil {
				o.Logger = quietLogger()
			}
			st, err := Open(context.Background(), path, Options{Logger: o.Logger, Committed: o.Committed, Now: o.Now, MaxImports: o.MaxImports})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open(o), open
	},
	Exec: func(t testing.TB, st storetest.Store, sql string) {
		t.Helper()
		if err := st.(*Store).write(context.Background(), func(t *wtx) error { _, err := t.tx.Exec(sql); return err }); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	},
	Count: func(t testing.TB, st storetest.Store, sql string) int64 {
		t.Helper()
		var n int64
		if err := st.(*Store).rdb.QueryRow(sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	},
	Commits: func(st storetest.Store) int64 { return st.(*Store).w.commits.Load() },
	Strings: func(t testing.TB, st storetest.Store, q string) []string {
		t.Helper()
		rows, err := st.(*Store).rdb.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			out = append(out, s)
		}
		return out
	},
	ImportLogs: func(st storetest.Store, file string, logs []*dsh.Log, o store.ImportOptions) ([]store.ImportResult, error) {
		return st.(*Store).importLogs(context.Background(), file, logs, o)
	},
	Unindex: func(t testing.TB, st storetest.Store) {
		t.Helper()
		for _, q := range []string{"DROP TABLE search_text", "DELETE FROM migrations WHERE name = '0019_search_text.sql'", "DROP TABLE search_fts", "DROP TABLE search_docs", "DROP TABLE search_sessions", "DELETE FROM migrations WHERE name = '0005_search.sql'",
			"DELETE FROM migrations WHERE name = '0007_search_through.sql'", "DELETE FROM migrations WHERE name = '0017_search_snippets.sql'",
			"DELETE FROM migrations WHERE name = '0018_search_cards.sql'"} {
			if _, err := st.(*Store).wdb.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	},
	WatchMarks: func(st storetest.Store) int { return st.(*Store).marks.Len() },
}

// TestContract runs the store contract (package storetest) on SQLite.
func TestContract(t *testing.T) { storetest.Run(t, sqliteEngine) }
