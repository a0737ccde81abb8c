package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"prism/core"
	"prism/store"
)

// ErrClosed is returned by writes after Close (store.ErrClosed).
var ErrClosed = store.ErrClosed

// translate maps a database error to prism's error vocabulary by SQLite's
// extended result code: a primary-key or unique violation is CodeConflict,
// a missing row CodeNotFound, a busy or locked database CodeUnavailable;
// everything else keeps its chain and reads as CodeInternal. what says what
// was being done.
func translate(err error, what string) error {
	if out, ok := store.Translated(err, what); ok {
		return out
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey, se.ExtendedCode == sqlite3.ErrConstraintUnique:
			return &core.Error{Name: "Error", Code: core.CodeConflict, Message: fmt.Sprintf("%s: %v", what, se), Err: err}
		case se.Code == sqlite3.ErrBusy, se.Code == sqlite3.ErrLocked:
			return &core.Error{Name: "Error", Code: core.CodeUnavailable, Message: fmt.Sprintf("%s: database is busy: %v", what, se), Err: err}
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// storeFault reports whether err is the store's failure rather than the
// data's: the disk or the database full, an I/O error, the database
// read-only, locked, busy, corrupt, not a database, out of memory or
// interrupted, the store closed, the context ended. Writing other data
// would fail the same way, so an import batch stops at once rather than
// blame a file for it (attemptBatch).
func storeFault(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrClosed) {
		return true
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrReadonly, sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrCorrupt,
		sqlite3.ErrNotADB, sqlite3.ErrNomem, sqlite3.ErrCantOpen, sqlite3.ErrPerm, sqlite3.ErrInterrupt, sqlite3.ErrProtocol:
		return true
	}
	return false
}
