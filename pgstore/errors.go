package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"prism/core"
)

// translate maps a database error to prism's error vocabulary by
// PostgreSQL's SQLSTATE: a unique or integrity violation is CodeConflict,
// a deadlock, serialization failure, shutdown or lost connection
// CodeUnavailable; everything else keeps its chain and reads as
// CodeInternal. what says what was being done.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var coded core.Coded
	if errors.As(err, &coded) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505", "23000": // unique_violation, integrity_constraint_violation (the contiguity trigger)
			return &core.Error{Name: "Error", Code: core.CodeConflict, Message: fmt.Sprintf("%s: %s", what, pe.Message), Err: err}
		case "40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300":
			return &core.Error{Name: "Error", Code: core.CodeUnavailable, Message: fmt.Sprintf("%s: database is busy or unavailable: %s", what, pe.Message), Err: err}
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || isConnErr(err) {
		return &core.Error{Name: "Error", Code: core.CodeUnavailable, Message: fmt.Sprintf("%s: the database is unreachable: %v", what, err), Err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isConnErr reports a broken or closed connection.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || err.Error() == "conn closed"
}
