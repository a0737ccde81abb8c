package db

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"prism/store"
	"prism/store/storetest"
)

// TestMigrateOTelSource: a database from before migrations 0013 and 0014
// (sessions derived from spans stored as source watch, the CHECK without
// otel) opens: the CHECK takes otel on every connection, the otel-
// sessions move to source otel, a dsh file's watched session stays watch,
// and the file passes SQLite's integrity check.
func TestMigrateOTelSource(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"otel-conv", "dsh-file"} {
		if _, _, err := st.SyncLog(ctx, storetest.Header(id), storetest.TurnEvents(0, 1, true), store.SourceWatch, true); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	// Back to the schema before 0013: the old CHECK, no otel_sessions.
	raw, err := sql.Open("sqlite3", path+"?_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var v int64
	if err := tx.QueryRow("PRAGMA schema_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DELETE FROM migrations WHERE name IN ('0013_sessions_source_otel.sql', '0014_otel_sessions.sql')",
		"DROP TABLE otel_sessions",
		"PRAGMA writable_schema = ON",
		`UPDATE sqlite_schema SET sql = replace(sql, '''live'', ''import'', ''watch'', ''otel'')', '''live'', ''import'', ''watch'')') WHERE type = 'table' AND name = 'sessions'`,
		fmt.Sprintf("PRAGMA schema_version = %d", v+2),
		"PRAGMA writable_schema = OFF",
	} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE sessions SET source = 'otel' WHERE id = 'dsh-file'"); err == nil {
		t.Fatal("the old CHECK was not restored")
	}
	raw.Close()

	st, err = Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, want := range map[string]string{"otel-conv": store.SourceOTel, "dsh-file": store.SourceWatch} {
		info, err := st.Session(ctx, id)
		if err != nil || info.Source != want {
			t.Errorf("%s: source %q %v, want %q", id, info.Source, err, want)
		}
	}
	// Written through the store's own connections: the new CHECK holds.
	if _, _, err := st.SyncLog(ctx, storetest.Header("otel-new"), storetest.TurnEvents(0, 1, true), store.SourceOTel, true); err != nil {
		t.Fatalf("a session of source otel after the upgrade: %v", err)
	}
	if _, err := st.wdb.ExecContext(ctx, "UPDATE sessions SET source = 'bogus' WHERE id = 'otel-new'"); err == nil {
		t.Error("the CHECK no longer refuses an unknown source")
	}
	var ok string
	if err := st.rdb.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity check: %q %v", ok, err)
	}
	if n, err := st.rdb.QueryContext(ctx, "SELECT 1 FROM otel_sessions"); err != nil {
		t.Errorf("otel_sessions: %v", err)
	} else {
		n.Close()
	}
}
