package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// A durable step's own statements — BEGIN IMMEDIATE, PRAGMA data_version,
// the INSERT of its events, the UPDATE of its session's row and COMMIT —
// run on statements the driver prepared on the write connection, called
// inside (*sql.Conn).Raw, not through database/sql. There each one took a
// fresh []driver.NamedValue and a conversion per argument, the
// connection's lock twice and a Result (data_version a Rows and a scan as
// well), and go-sqlite3 parsed BEGIN and COMMIT again on every Exec (a
// statement without arguments is not prepared): about 14 µs of a 1-call
// step, over a third of what the store adds to a bare commit of the same
// rows (BENCHMARKS.md). The arguments are counted and converted as
// database/sql counts and converts them (go-sqlite3 has no converter of
// its own); every other statement keeps database/sql.

// driverStmt is a statement as the driver prepared it.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// rawStmt is a statement the driver prepared on the write connection,
// with the number of arguments it takes (database/sql checks it; so does
// exec).
type rawStmt struct {
	s  driverStmt
	in int
}

// rawStmts are the writer's driver statements, all on conn; they are
// used under the writer's lock (w.mu), as conn is.
type rawStmts struct {
	conn *sql.Conn
	// nv is exec's buffer of arguments, reused; dest queryInt's row.
	nv   []driver.NamedValue
	dest [1]driver.Value

	begin, commit, dataVersion, updSession rawStmt
	// insEvents[n] inserts n events (1 ≤ n ≤ insertRows).
	insEvents [insertRows + 1]rawStmt
}

// prepareRaw prepares the writer's driver statements on conn. On error
// the ones prepared are closed.
func prepareRaw(conn *sql.Conn) (_ *rawStmts, err error) {
	r := &rawStmts{conn: conn}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	err = conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot prepare with a context", dc)
		}
		prep := func(query string) (rawStmt, error) {
			s, err := pc.PrepareContext(context.Background(), query)
			if err != nil {
				return rawStmt{}, fmt.Errorf("prepare %q: %w", query, err)
			}
			ds, ok := s.(driverStmt)
			if !ok {
				s.Close()
				return rawStmt{}, fmt.Errorf("prepare %q: driver statement %T cannot run with a context", query, s)
			}
			return rawStmt{s: ds, in: s.NumInput()}, nil
		}
		var err error
		if r.begin, err = prep("BEGIN IMMEDIATE"); err != nil {
			return err
		}
		if r.commit, err = prep("COMMIT"); err != nil {
			return err
		}
		if r.dataVersion, err = prep("PRAGMA data_version"); err != nil {
			return err
		}
		if r.updSession, err = prep(updSessionSQL); err != nil {
			return err
		}
		for n := 1; n <= insertRows; n++ {
			if r.insEvents[n], err = prep(insertEventsSQL(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write connection: %w", err)
	}
	return r, nil
}

// exec runs s with args, refusing a wrong number of them as database/sql
// does (SQLite would bind NULL to the missing ones).
func (r *rawStmts) exec(s rawStmt, args ...any) error {
	if s.in >= 0 && len(args) != s.in {
		return fmt.Errorf("sql: expected %d arguments, got %d", s.in, len(args))
	}
	nv := r.nv[:0]
	defer func() {
		clear(nv) // drop the references to the arguments
		r.nv = nv[:0]
	}()
	for i, a := range args {
		if !driver.IsValue(a) {
			v, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				return fmt.Errorf("sql: converting argument $%d type: %w", i+1, err)
			}
			a = v
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	return r.conn.Raw(func(any) error {
		_, err := s.s.ExecContext(context.Background(), nv)
		return err
	})
}

// queryInt runs s, which returns one integer in one row.
func (r *rawStmts) queryInt(s rawStmt) (int64, error) {
	var v int64
	err := r.conn.Raw(func(any) error {
		rows, err := s.s.QueryContext(context.Background(), nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := rows.Next(r.dest[:]); err != nil {
			return err
		}
		n, ok := r.dest[0].(int64)
		if !ok {
			return fmt.Errorf("got a %T, not an integer", r.dest[0])
		}
		v = n
		return nil
	})
	return v, err
}

// close closes the statements (before the connection closes).
func (r *rawStmts) close() {
	stmts := append([]rawStmt{r.begin, r.commit, r.dataVersion, r.updSession}, r.insEvents[:]...)
	r.conn.Raw(func(any) error { //nolint:errcheck // closing
		for _, s := range stmts {
			if s.s != nil {
				s.s.Close()
			}
		}
		return nil
	})
}
