package pgstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/notes"
	"prism/store"
)

// Notes returns a session's notes that q selects, oldest first; the rules
// are the SQLite store's (a note on a call the log no longer has is not
// returned; an unknown session is core.CodeNotFound).
func (st *Store) Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error) {
	var exists bool
	if err := st.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)", session).Scan(&exists); err != nil {
		return nil, translate(err, "read notes of session "+session)
	}
	if !exists {
		return nil, store.NotFound(session)
	}
	var args []any
	query := store.NotesSQL(session, q, "ord", func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	})
	rows, err := st.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err, "read notes of session "+session)
	}
	defer rows.Close()
	out, err := store.ScanNotes(rows)
	return out, translate(err, "read notes of session "+session)
}

// PutNote writes a note and returns it as stored; the rules are the SQLite
// store's. Any node may write a note (no session ownership needed): the
// transaction NOTIFYs the note channel, so every node's pages read the
// session's notes again.
func (st *Store) PutNote(ctx context.Context, in notes.Input) (notes.Note, error) {
	data, facts, err := notes.Check(in)
	if err != nil {
		return notes.Note{}, err
	}
	now := st.now().UnixMilli()
	var out notes.Note
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var lastSeq int64
		err := tx.QueryRow(ctx, "SELECT last_seq FROM sessions WHERE id = $1 FOR SHARE", in.Session).Scan(&lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NotFound(in.Session)
		}
		if err != nil {
			return err
		}
		if in.ID != "" {
			n, err := store.ScanNote(tx.QueryRow(ctx, "SELECT "+store.NoteCols+" FROM notes WHERE id = $1 AND session_id = $2 AND removed_at IS NULL FOR UPDATE", in.ID, in.Session))
			if errors.Is(err, pgx.ErrNoRows) {
				return notes.NotFound(in.Session, in.ID)
			}
			if err != nil {
				return err
			}
			if n.Kind != in.Kind {
				return core.Errorf(core.CodeInvalid, "note %s is a %s note, not a %s note", in.ID, n.Kind, in.Kind)
			}
			if _, err := tx.Exec(ctx, "UPDATE notes SET data = $1, label = $2, commented = $3, time = $4, author = $5 WHERE id = $6",
				string(data), facts.Label, facts.Commented, now, in.Author, in.ID); err != nil {
				return err
			}
			n.Data, n.Time, n.Author = data, now, in.Author
			out = n
			return notifyNotes(ctx, tx, in.Session)
		}
		if in.CallID != "" {
			var found bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM events WHERE session_id = $1 AND call_id = $2)", in.Session, in.CallID).Scan(&found); err != nil {
				return err
			}
			if !found {
				return notes.CallNotFound(in.Session, in.CallID)
			}
		}
		if key := notes.OnceKey(data); in.Once && key != "" {
			// One writer per key at a time, across nodes: the check and
			// the insert below are one step.
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "prism-note-once|"+in.Session+"|"+in.Kind+"|"+key); err != nil {
				return err
			}
			var id string
			err := tx.QueryRow(ctx, "SELECT id FROM notes WHERE session_id = $1 AND kind = $2 AND (data::jsonb)->>'key' = $3 LIMIT 1", in.Session, in.Kind, key).Scan(&id)
			switch {
			case err == nil:
				return notes.OnceConflict(in.Session, in.Kind, key, id)
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		out, err = insertNote(ctx, tx, in, lastSeq, now)
		return err
	})
	if err != nil {
		return notes.Note{}, translate(err, "write note on session "+in.Session)
	}
	return out, nil
}

// insertNote checks and inserts a new note in tx (AtSeq defaults to
// lastSeq, its time is now) and NOTIFYs the note channel at commit; the
// caller has checked the session and the call.
func insertNote(ctx context.Context, tx pgx.Tx, in notes.Input, lastSeq, now int64) (notes.Note, error) {
	data, facts, err := notes.Check(in)
	if err != nil {
		return notes.Note{}, err
	}
	n := notes.Note{ID: core.NewID(), Session: in.Session, Kind: in.Kind, CallID: in.CallID, AtSeq: lastSeq, Time: now, Author: in.Author, Data: data}
	if in.AtSeq != nil {
		n.AtSeq = *in.AtSeq
	}
	if _, err := tx.Exec(ctx, `INSERT INTO notes (id, session_id, kind, call_id, at_seq, time, author, data, label, commented)
		VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6, $7, $8, $9, $10)`,
		n.ID, n.Session, n.Kind, n.CallID, n.AtSeq, n.Time, n.Author, string(data), facts.Label, facts.Commented); err != nil {
		return notes.Note{}, err
	}
	return n, notifyNotes(ctx, tx, in.Session)
}

// RemoveNote removes a note and returns it as it is now; the rules are the
// SQLite store's (the row stays, with RemovedAt and RemovedAtSeq).
func (st *Store) RemoveNote(ctx context.Context, session, id string) (notes.Note, error) {
	now := st.now().UnixMilli()
	var out notes.Note
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var lastSeq int64
		err := tx.QueryRow(ctx, "SELECT last_seq FROM sessions WHERE id = $1 FOR SHARE", session).Scan(&lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NotFound(session)
		}
		if err != nil {
			return err
		}
		out, err = store.ScanNote(tx.QueryRow(ctx, "UPDATE notes SET removed_at = $1, removed_at_seq = $2 WHERE id = $3 AND session_id = $4 AND removed_at IS NULL RETURNING "+store.NoteCols,
			now, lastSeq, id, session))
		if errors.Is(err, pgx.ErrNoRows) {
			return notes.NotFound(session, id)
		}
		if err != nil {
			return err
		}
		return notifyNotes(ctx, tx, session)
	})
	if err != nil {
		return notes.Note{}, translate(err, "remove note "+id)
	}
	return out, nil
}

// notifyNotes tells every node, at commit, that a session's notes changed.
func notifyNotes(ctx context.Context, tx pgx.Tx, session string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", channelNotes, session)
	return err
}

// OpenNotes returns the notes of kind not removed, across sessions, oldest
// first; the rules are the SQLite store's.
func (st *Store) OpenNotes(ctx context.Context, kind string) ([]notes.Note, error) {
	rows, err := st.pool.Query(ctx, store.OpenNotesSQL("$1", "ord"), kind)
	if err != nil {
		return nil, translate(err, "read open "+kind+" notes")
	}
	defer rows.Close()
	out, err := store.ScanNotes(rows)
	return out, translate(err, "read open "+kind+" notes")
}

// AnnotatedCount returns how many sessions have a label (a label note not
// removed): the count of ListOptions.Annotated.
func (st *Store) AnnotatedCount(ctx context.Context) (int, error) {
	var n int
	err := st.pool.QueryRow(ctx, store.CountAnnotatedSQL).Scan(&n)
	return n, translate(err, "count annotated sessions")
}
