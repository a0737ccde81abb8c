package db

import (
	"context"
	"database/sql"
)

// A write transaction runs on the writer's own *sql.Conn, begun and ended
// with plain statements, not through a *sql.Tx: database/sql starts a
// goroutine for every Tx (to roll it back if its context ends) and
// another for every query inside one (its context can be cancelled), and
// each start and end wakes an idle thread — two goroutines and about four
// wake-ups on every durable step's critical path. On a Conn, with
// context.Background(), it starts none. The statements are the writer's,
// prepared on that connection: BEGIN IMMEDIATE, COMMIT and a durable
// step's own statements as the driver's (rawstmt.go), the others through
// database/sql.

// connTx is a write transaction on the writer's connection. Its methods
// mirror the *sql.Tx ones the writer's code calls; all run with
// context.Background() (a write transaction is never abandoned halfway:
// the caller waits for its outcome).
type connTx struct {
	c *sql.Conn
	// raw runs BEGIN IMMEDIATE and COMMIT (rawstmt.go).
	raw *rawStmts
	// prepared are the statements Prepare made, closed when the
	// transaction ends (as a Tx closes its own).
	prepared []*sql.Stmt
	done     bool
}

// beginConnTx starts a write transaction on c, whose driver statements
// raw are: BEGIN IMMEDIATE, as the write connection's DSN
// (_txlock=immediate) makes a Tx begin.
func beginConnTx(c *sql.Conn, raw *rawStmts) (*connTx, error) {
	if err := raw.exec(raw.begin); err != nil {
		return nil, err
	}
	return &connTx{c: c, raw: raw}, nil
}

// Exec runs a statement in the transaction.
func (t *connTx) Exec(query string, args ...any) (sql.Result, error) {
	if t.done {
		return nil, sql.ErrTxDone
	}
	return t.c.ExecContext(context.Background(), query, args...)
}

// Query runs a query in the transaction.
func (t *connTx) Query(query string, args ...any) (*sql.Rows, error) {
	if t.done {
		return nil, sql.ErrTxDone
	}
	return t.c.QueryContext(context.Background(), query, args...)
}

// QueryContext runs a query in the transaction with ctx.
func (t *connTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if t.done {
		return nil, sql.ErrTxDone
	}
	return t.c.QueryContext(ctx, query, args...)
}

// QueryRow runs a query of at most one row in the transaction.
func (t *connTx) QueryRow(query string, args ...any) *sql.Row {
	return t.c.QueryRowContext(context.Background(), query, args...)
}

// Prepare prepares a statement for the rest of the transaction.
func (t *connTx) Prepare(query string) (*sql.Stmt, error) {
	if t.done {
		return nil, sql.ErrTxDone
	}
	s, err := t.c.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	t.prepared = append(t.prepared, s)
	return s, nil
}

// Stmt returns the writer's statement s for use in the transaction: it
// is prepared on the same connection already.
func (t *connTx) Stmt(s *sql.Stmt) *sql.Stmt { return s }

// Commit commits the transaction. A failed COMMIT can leave SQLite's
// transaction open (SQLITE_BUSY): it is rolled back, as go-sqlite3's own
// Tx.Commit does, so the connection is not left inside it.
func (t *connTx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	t.end()
	err := t.raw.exec(t.raw.commit)
	if err != nil {
		t.c.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck // it may have ended already
	}
	return err
}

// Rollback rolls the transaction back (SQLite may have rolled it back
// itself after some errors: ROLLBACK then fails, as a Tx's would).
func (t *connTx) Rollback() error {
	if t.done {
		return sql.ErrTxDone
	}
	t.end()
	_, err := t.c.ExecContext(context.Background(), "ROLLBACK")
	return err
}

// end marks the transaction done and closes the statements it prepared.
func (t *connTx) end() {
	t.done = true
	for _, s := range t.prepared {
		s.Close()
	}
	t.prepared = nil
}

// writeDB is the store's write connection. Until the writer exists it is
// the one-connection pool's; then the writer holds that connection as its
// own *sql.Conn (connTx), and a statement through writeDB runs on it
// under the writer's lock (w.mu): between two of its transactions, never
// inside one — as it waited for the pool's connection before.
type writeDB struct {
	db *sql.DB
	w  *writer // set once, in Open, before the store is shared
}

// Exec runs a statement on the write connection.
func (d *writeDB) Exec(query string, args ...any) (sql.Result, error) {
	return d.ExecContext(context.Background(), query, args...)
}

// ExecContext runs a statement on the write connection.
func (d *writeDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if w := d.w; w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.conn.ExecContext(ctx, query, args...)
	}
	return d.db.ExecContext(ctx, query, args...)
}

// QueryRow runs a query of at most one row on the write connection.
func (d *writeDB) QueryRow(query string, args ...any) *sql.Row {
	return d.QueryRowContext(context.Background(), query, args...)
}

// QueryRowContext runs a query of at most one row on the write
// connection (its row is read when scanned, after the lock is let go).
func (d *writeDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if w := d.w; w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.conn.QueryRowContext(ctx, query, args...)
	}
	return d.db.QueryRowContext(ctx, query, args...)
}

// Stats is the write pool's: once the writer holds its one connection no
// statement waits for the pool (they wait for w.mu instead, not counted).
func (d *writeDB) Stats() sql.DBStats { return d.db.Stats() }
