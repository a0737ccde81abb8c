package engine_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"prism/db"
	"prism/engine"
)

func TestIsPostgres(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u:p@localhost:5432/prism":   true,
		"postgresql://u:p@localhost:5432/prism": true,
		"./prism.db":                            false,
		"/var/lib/prism/prism.db":               false,
		"":                                      false,
	} {
		if got := engine.IsPostgres(dsn); got != want {
			t.Errorf("IsPostgres(%q) = %v, want %v", dsn, got, want)
		}
	}
}

// TestOpen_sqliteFile: a path opens the SQLite store there.
func TestOpen_sqliteFile(t *testing.T) {
	st, err := engine.Open(context.Background(), filepath.Join(t.TempDir(), "prism.db"), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*db.Store); !ok {
		t.Errorf("Open of a file path = %T, want *db.Store", st)
	}
}
