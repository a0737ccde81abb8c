package db

import (
	"context"
	"database/sql"
	"errors"

	"prism/core"
	"prism/core/notes"
	"prism/store"
)

// Notes returns a session's notes that q selects, in the order they were
// made (an edit does not move a note). A note on
// a call its log no longer has (a replaced log) is not returned. An
// unknown session is core.CodeNotFound.
func (st *Store) Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error) {
	var exists int
	err := st.rdb.QueryRowContext(ctx, "SELECT count(*) FROM sessions WHERE id = ?", session).Scan(&exists)
	if err != nil {
		return nil, translate(err, "read notes of session "+session)
	}
	if exists == 0 {
		return nil, store.NotFound(session)
	}
	var args []any
	query := store.NotesSQL(session, q, "rowid", func(v any) string {
		args = append(args, v)
		return "?"
	})
	rows, err := st.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err, "read notes of session "+session)
	}
	defer rows.Close()
	out, err := store.ScanNotes(rows)
	return out, translate(err, "read notes of session "+session)
}

// PutNote writes a note and returns it as stored: a new one (in.ID "")
// or, the last write winning, new data for an existing one (its kind must
// be in.Kind; its call and AtSeq stay). The kind and data are checked
// (notes.Check); an unknown session, a call the session does not have
// and an unknown or removed note are core.CodeNotFound, naming it. Open
// pages are told through Options.Committed (a Commit with Notes set).
func (st *Store) PutNote(ctx context.Context, in notes.Input) (notes.Note, error) {
	data, facts, err := notes.Check(in)
	if err != nil {
		return notes.Note{}, err
	}
	now := st.now().UnixMilli()
	var out notes.Note
	err = st.write(ctx, func(t *wtx) error {
		s, err := t.state(in.Session)
		if err != nil {
			return err
		}
		if !s.exists {
			return store.NotFound(in.Session)
		}
		if in.ID != "" {
			n, err := store.ScanNote(t.tx.QueryRow("SELECT "+store.NoteCols+" FROM notes WHERE id = ? AND session_id = ? AND removed_at IS NULL", in.ID, in.Session))
			if errors.Is(err, sql.ErrNoRows) {
				return notes.NotFound(in.Session, in.ID)
			}
			if err != nil {
				return translate(err, "read note "+in.ID)
			}
			if n.Kind != in.Kind {
				return core.Errorf(core.CodeInvalid, "note %s is a %s note, not a %s note", in.ID, n.Kind, in.Kind)
			}
			if _, err := t.tx.Exec("UPDATE notes SET data = ?, label = ?, commented = ?, time = ?, author = ? WHERE id = ?",
				string(data), facts.Label, b2i(facts.Commented), now, in.Author, in.ID); err != nil {
				return translate(err, "write note "+in.ID)
			}
			n.Data, n.Time, n.Author = data, now, in.Author
			out, s.notes = n, true
			return nil
		}
		out, err = t.addNote(in, s, data, facts, now)
		return err
	})
	if err != nil {
		return notes.Note{}, err
	}
	return out, nil
}

// addNote inserts a new note (in, checked by notes.Check into data and
// facts) on the stored session s in the transaction: its call must be in
// the log, a once note's key not taken; AtSeq defaults to the session's
// last seq. Open pages are told at commit.
func (t *wtx) addNote(in notes.Input, s *sessState, data []byte, facts notes.Facts, now int64) (notes.Note, error) {
	if in.CallID != "" {
		var one int
		err := t.tx.QueryRow("SELECT count(*) FROM events WHERE session_id = ? AND call_id = ?", in.Session, in.CallID).Scan(&one)
		if err != nil {
			return notes.Note{}, translate(err, "find call "+in.CallID)
		}
		if one == 0 {
			return notes.Note{}, notes.CallNotFound(in.Session, in.CallID)
		}
	}
	if key := notes.OnceKey(data); in.Once && key != "" {
		var id string
		err := t.tx.QueryRow("SELECT id FROM notes WHERE session_id = ? AND kind = ? AND json_extract(data, '$.key') = ?", in.Session, in.Kind, key).Scan(&id)
		switch {
		case err == nil:
			return notes.Note{}, notes.OnceConflict(in.Session, in.Kind, key, id)
		case !errors.Is(err, sql.ErrNoRows):
			return notes.Note{}, translate(err, "find note key "+key)
		}
	}
	n := notes.Note{ID: core.NewID(), Session: in.Session, Kind: in.Kind, CallID: in.CallID, AtSeq: s.sum.LastSeq, Time: now, Author: in.Author, Data: data}
	if in.AtSeq != nil {
		n.AtSeq = *in.AtSeq
	}
	var call any
	if n.CallID != "" {
		call = n.CallID
	}
	if _, err := t.tx.Exec(`INSERT INTO notes (id, session_id, kind, call_id, at_seq, time, author, data, label, commented)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID, n.Session, n.Kind, call, n.AtSeq, n.Time, n.Author, string(data), facts.Label, b2i(facts.Commented)); err != nil {
		return notes.Note{}, translate(err, "write note on session "+in.Session)
	}
	s.notes = true
	return n, nil
}

// RemoveNote removes a note and returns it as it is now: it keeps its row,
// with RemovedAt and RemovedAtSeq (the session's last seq), so time travel
// still shows it before then. An unknown session, or a note unknown or
// already removed, is core.CodeNotFound.
func (st *Store) RemoveNote(ctx context.Context, session, id string) (notes.Note, error) {
	now := st.now().UnixMilli()
	var out notes.Note
	err := st.write(ctx, func(t *wtx) error {
		s, err := t.state(session)
		if err != nil {
			return err
		}
		if !s.exists {
			return store.NotFound(session)
		}
		res, err := t.tx.Exec("UPDATE notes SET removed_at = ?, removed_at_seq = ? WHERE id = ? AND session_id = ? AND removed_at IS NULL", now, s.sum.LastSeq, id, session)
		if err != nil {
			return translate(err, "remove note "+id)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return notes.NotFound(session, id)
		}
		out, err = store.ScanNote(t.tx.QueryRow("SELECT "+store.NoteCols+" FROM notes WHERE id = ?", id))
		if err != nil {
			return translate(err, "read note "+id)
		}
		s.notes = true
		return nil
	})
	if err != nil {
		return notes.Note{}, err
	}
	return out, nil
}

// OpenNotes returns the notes of kind not removed, across sessions, in the
// order they were made; a note on a call its log no longer has is not
// returned.
func (st *Store) OpenNotes(ctx context.Context, kind string) ([]notes.Note, error) {
	rows, err := st.rdb.QueryContext(ctx, store.OpenNotesSQL("?", "rowid"), kind)
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
	err := st.rdb.QueryRowContext(ctx, store.CountAnnotatedSQL).Scan(&n)
	return n, translate(err, "count annotated sessions")
}
