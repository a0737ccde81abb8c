package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"

	"prism/store"
)

// The hot commit path: a lone append to a session the writer holds in its
// cache, committed on the appender's goroutine (appendInline), goes to the
// write connection's driver handle directly (sql.Conn.Raw) with statements
// prepared on it for the connection's life. database/sql would start a
// goroutine per transaction (Tx.awaitDone), bind each statement to the
// transaction and convert every argument through its locks; a durable step
// pays all of that once per commit. The transaction is the one tryBatch
// runs for the same request — the same BEGIN IMMEDIATE, data_version check,
// INSERTs, session row and COMMIT, at the connection's synchronous=FULL —
// and whatever this path does not handle (a session it must read or create,
// a new title and so its search document, a rejected request, a failed
// statement, another process's commit) is rolled back and run again by the
// general path, so errors and what is written stay the same.

// rawStmts are the hot path's statements, prepared on one driver
// connection; the writer owns them (w.mu).
type rawStmts struct {
	conn    *sqlite3.SQLiteConn
	begin   driver.Stmt // BEGIN IMMEDIATE, as the connection's _txlock
	commit  driver.Stmt
	abort   driver.Stmt // ROLLBACK
	version driver.Stmt
	upd     driver.Stmt
	ins     [insertRows + 1]driver.Stmt // INSERTs of n events
	args    []driver.NamedValue         // reused; cleared after each statement
	dest    [1]driver.Value
}

// errNotRaw ends a raw attempt that the general path must run instead.
var errNotRaw = errors.New("the append needs the general commit path")

// use makes c the connection the statements belong to, dropping those
// prepared on another (database/sql replaced a broken connection).
func (r *rawStmts) use(c *sqlite3.SQLiteConn) {
	if r.conn != c {
		r.close()
		r.conn = c
	}
}

// close finalizes the prepared statements (before the connection closes).
func (r *rawStmts) close() {
	for _, s := range append([]driver.Stmt{r.begin, r.commit, r.abort, r.version, r.upd}, r.ins[:]...) {
		if s != nil {
			s.Close() //nolint:errcheck
		}
	}
	*r = rawStmts{args: r.args[:0]}
}

// stmt returns *slot, preparing q() into it on first use.
func (r *rawStmts) stmt(slot *driver.Stmt, q func() string) (driver.Stmt, error) {
	if *slot == nil {
		s, err := r.conn.Prepare(q())
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", q(), err)
		}
		*slot = s
	}
	return *slot, nil
}

// exec runs s with args, converted as database/sql would for these types.
func (r *rawStmts) exec(s driver.Stmt, args []any) error {
	nv := r.args[:0]
	defer func() {
		clear(nv) // keep no event data past the statement
		r.args = nv[:0]
	}()
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	_, err := s.(driver.StmtExecContext).ExecContext(context.Background(), nv)
	return err
}

// driverValue is a as a driver.Value: the writer's arguments are strings,
// integers and nil; anything else goes through database/sql's converter.
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case nil, int64, string, []byte, float64, bool:
		return v, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// run executes the argument-less statement in *slot, prepared from q.
func (r *rawStmts) run(slot *driver.Stmt, q string) error {
	s, err := r.stmt(slot, func() string { return q })
	if err != nil {
		return err
	}
	return r.exec(s, nil)
}

// rollback ends the transaction, dropping what it wrote.
func (r *rawStmts) rollback() {
	r.run(&r.abort, "ROLLBACK") //nolint:errcheck
}

// dataVersion reads PRAGMA data_version on the raw connection.
func (r *rawStmts) dataVersion() (int64, error) {
	s, err := r.stmt(&r.version, func() string { return "PRAGMA data_version" })
	if err != nil {
		return 0, err
	}
	rows, err := s.(driver.StmtQueryContext).QueryContext(context.Background(), nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if err := rows.Next(r.dest[:]); err != nil {
		return 0, err
	}
	got := r.dest[0]
	r.dest[0] = nil
	v, ok := got.(int64)
	if !ok {
		return 0, fmt.Errorf("data_version is %T, not an integer", got)
	}
	return v, nil
}

// commitRaw commits the lone append r on the hot path; w.mu is held. ran
// is false when the general path must run r (nothing was written); else
// err is r's outcome and commits what the commit changed.
func (w *writer) commitRaw(r *request) (ran bool, commits []store.Commit, err error) {
	if r.kind != kindAppend || w.isolateAlways || w.relaxed || w.lag.inline {
		return false, nil, nil
	}
	if c, ok := w.cache[r.sessionID]; !ok || !c.exists {
		return false, nil, nil
	}
	conn, err := w.st.wdb.Conn(context.Background())
	if err != nil {
		return false, nil, nil // the general path reports it
	}
	defer conn.Close()
	rerr := conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return errNotRaw
		}
		w.raw.use(c)
		ran, commits, err = w.commitOn(c, r)
		return nil
	})
	if rerr != nil {
		return false, nil, nil
	}
	return ran, commits, err
}

// commitOn is commitRaw's transaction on the driver connection c.
func (w *writer) commitOn(c *sqlite3.SQLiteConn, r *request) (ran bool, commits []store.Commit, err error) {
	if err := w.raw.run(&w.raw.begin, "BEGIN IMMEDIATE"); err != nil {
		return true, nil, translate(err, "begin write transaction")
	}
	notRaw := func() (bool, []store.Commit, error) {
		w.raw.rollback()
		return false, nil, nil
	}
	v, err := w.raw.dataVersion()
	if err != nil {
		w.raw.rollback()
		return true, nil, translate(err, "read data_version")
	}
	if v != w.dataVersion || len(w.cache) > 10000 {
		// Another connection committed (or the cache is due a clear): the
		// general path reads the session again (beginAsSet).
		return notRaw()
	}
	t := newWtx(w, nil)
	t.raw = &w.raw
	rejected, dbErr := t.apply(r)
	if rejected != nil || dbErr != nil {
		return notRaw()
	}
	if s := t.touched[r.sessionID]; s == nil || s.created || s.replaced || s.retitled || s.deleted {
		return notRaw() // the session's search document changes: tryBatch files it
	}
	if err := t.finish(); err != nil {
		return notRaw()
	}
	w.rawCommits.Add(1)
	if err := w.raw.run(&w.raw.commit, "COMMIT"); err != nil {
		// SQLite may leave the transaction open after a failed COMMIT;
		// end it, as database/sql's Tx.Commit does (through the driver).
		w.raw.rollback()
		return true, nil, translate(err, "commit")
	}
	w.commits.Add(1)
	commits = t.commits()
	t.publish()
	return true, commits, nil
}
