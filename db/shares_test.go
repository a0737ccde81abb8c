package db

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core/share"
	"prism/store/storetest"
)

func newShareStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := Open(context.Background(), path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	storetest.MustCreate(t, st, "s1")
	if err := st.AppendEvents(context.Background(), "s1", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	return st, path
}

// TestShares_tokenNotStored: the token is nowhere in the database files;
// its hash is.
func TestShares_tokenNotStored(t *testing.T) {
	st, path := newShareStore(t)
	_, tok, err := st.CreateShare(context.Background(), share.Spec{SessionID: "s1", Label: "x"})
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := share.ParseToken(tok)
	st.Close()
	var files []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		files = append(files, b...)
	}
	if bytes.Contains(files, []byte(tok)) {
		t.Error("the token is stored in the database")
	}
	if !bytes.Contains(files, hash[:]) {
		t.Error("the token's hash is not in the database (test reads the wrong files?)")
	}
}

// TestShares_lookupUsesIndex: a token is found through the unique index on
// its hash, not by scanning the table.
func TestShares_lookupUsesIndex(t *testing.T) {
	st, _ := newShareStore(t)
	rows, err := st.rdb.Query("EXPLAIN QUERY PLAN SELECT "+shareCols+" FROM shares WHERE token_hash = ?", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "USING INDEX") || strings.Contains(plan.String(), "SCAN") {
		t.Errorf("token lookup plan:\n%s", plan.String())
	}
}
