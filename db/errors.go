package db

import (
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
