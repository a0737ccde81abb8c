package pgstore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"prism/core"
	"prism/store"
)

// translate maps a database error to prism's error vocabulary: the one
// place where the driver's errors become prism's. A unique violation on
// the sessions key (an insert that lost to another transaction creating
// the same id) is the create's own refusal, "create session X: it already
// exists" (CodeConflict, as when the row was there before; takenSession
// tells it apart); any other unique or integrity violation is
// CodeConflict; a deadlock, serialization failure or lock
// timeout CodeUnavailable; a database that cannot be reached — shut down,
// restarting, refusing connections, or a connection that broke — a
// *store.UnavailableError (CodeUnavailable with a Retry-After, "the store
// is unreachable"); everything else keeps its chain and reads as
// CodeInternal. what says what was being done.
func translate(err error, what string) error {
	if out, ok := store.Translated(err, what); ok {
		return out
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if id, ok := takenSession(err); ok {
			return &core.Error{Name: "Error", Code: core.CodeConflict, Message: fmt.Sprintf("create session %s: it already exists", id), Err: err}
		}
		switch pe.Code {
		case "23505", "23000": // unique_violation, integrity_constraint_violation (the contiguity trigger)
			return &core.Error{Name: "Error", Code: core.CodeConflict, Message: fmt.Sprintf("%s: %s", what, pe.Message), Err: err}
		case "40001", "40P01", "55P03", "53300": // serialization, deadlock, lock not available, too many connections
			return &core.Error{Name: "Error", Code: core.CodeUnavailable, Message: fmt.Sprintf("%s: database is busy or unavailable: %s", what, pe.Message), Err: err}
		}
		if unreachable(pe) {
			return &store.UnavailableError{Op: what, Err: err}
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if isConnErr(err) {
		return &store.UnavailableError{Op: what, Err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// sessionsKey is the sessions table's primary key constraint.
const sessionsKey = "sessions_pkey"

// takenSession reports whether err is a unique violation on the sessions
// key — an insert of a session id that another transaction committed
// first: the insert waited for it and then failed (or, were the key
// deferred, the commit would) — and the id, as the server's detail names
// it ("Key (id)=(x) already exists."), or "" when it does not.
func takenSession(err error) (string, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != sessionsKey {
		return "", false
	}
	id, ok := strings.CutPrefix(pe.Detail, "Key (id)=(")
	if id, found := strings.CutSuffix(id, ") already exists."); ok && found {
		return id, true
	}
	return "", true
}

// unreachable reports a server error that says the server went away or
// cannot serve yet: class 08 (connection exception), 57P01–57P03
// (administrator or crash shutdown, cannot connect now: a restart's
// recovery).
func unreachable(pe *pgconn.PgError) bool {
	switch pe.Code {
	case "57P01", "57P02", "57P03":
		return true
	}
	return len(pe.Code) == 5 && pe.Code[:2] == "08"
}

// isConnErr reports an error of the connection rather than of a
// statement: one that could not be opened, broke (EOF, reset, refused,
// closed), or timed out on the network.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	return err.Error() == "conn closed" || err.Error() == "closed pool"
}
