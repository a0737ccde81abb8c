package store

import (
	"strings"

	"prism/core/notes"
)

// NoteCols are the columns of a notes row that ScanNote reads, in its
// order; both engines' notes tables have them.
const NoteCols = `id, session_id, kind, call_id, at_seq, time, author, data, removed_at, removed_at_seq`

// noteColsOfN is NoteCols qualified by the alias n.
var noteColsOfN = "n." + strings.ReplaceAll(NoteCols, ", ", ", n.")

// Scanner is one row of a query's result: *sql.Row, *sql.Rows, pgx.Row
// and pgx.Rows all are.
type Scanner interface {
	Scan(dest ...any) error
}

// Rows are a query's result rows: *sql.Rows and pgx.Rows both are. The
// caller closes them.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// ScanNote reads one notes row of NoteCols. Its NULLs (no call, not
// removed) become the note's zero values ("", 0, nil RemovedAtSeq).
func ScanNote(row Scanner) (notes.Note, error) {
	var n notes.Note
	var call *string
	var removed *int64
	var data string
	if err := row.Scan(&n.ID, &n.Session, &n.Kind, &call, &n.AtSeq, &n.Time, &n.Author, &data, &removed, &n.RemovedAtSeq); err != nil {
		return n, err
	}
	n.Data = []byte(data)
	if call != nil {
		n.CallID = *call
	}
	if removed != nil {
		n.RemovedAt = *removed
	}
	return n, nil
}

// ScanNotes reads every row of rows (NoteCols) in order; never nil. The
// caller closes rows and wraps the error.
func ScanNotes(rows Rows) ([]notes.Note, error) {
	out := []notes.Note{}
	for rows.Next() {
		n, err := ScanNote(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// noteOnLiveCall keeps a note whose call its log still has (a replaced
// log may have dropped it), or one on no call.
const noteOnLiveCall = "(n.call_id IS NULL OR EXISTS (SELECT 1 FROM events e WHERE e.session_id = n.session_id AND e.call_id = n.call_id))"

// NotesSQL returns the query of a session's notes that q selects, in the
// order they were made: order is the engine's column of that order (the
// SQLite rowid, PostgreSQL's ord), arg adds an argument and returns its
// placeholder. A note on a call the log no longer has is left out.
func NotesSQL(session string, q notes.Query, order string, arg func(v any) string) string {
	where := []string{"n.session_id = " + arg(session), noteOnLiveCall}
	if q.ID != "" {
		where = append(where, "n.id = "+arg(q.ID))
	}
	if q.Kind != "" {
		where = append(where, "n.kind = "+arg(q.Kind))
	}
	if q.AsOf != nil {
		where = append(where, "n.at_seq <= "+arg(*q.AsOf)+" AND (n.removed_at_seq IS NULL OR n.removed_at_seq > "+arg(*q.AsOf)+")")
	} else if !q.Removed {
		where = append(where, "n.removed_at IS NULL")
	}
	return "SELECT " + noteColsOfN + " FROM notes n WHERE " + strings.Join(where, " AND ") + " ORDER BY n." + order
}

// OpenNotesSQL returns the query of the notes of one kind (its
// placeholder kindArg) not removed, across sessions, in the order they
// were made (order as in NotesSQL); a note on a call its log no longer has
// is left out.
func OpenNotesSQL(kindArg, order string) string {
	return "SELECT " + noteColsOfN + " FROM notes n WHERE n.kind = " + kindArg + " AND n.removed_at IS NULL AND " + noteOnLiveCall + " ORDER BY n." + order
}
