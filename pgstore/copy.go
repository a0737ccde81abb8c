package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"prism/core/notes"
	"prism/store"
)

// PutSpanRecords stores spans as they are, with the time each was
// received, without deriving sessions (prism migrate copies the sessions
// derived from them beside): a span already stored, by trace and span id,
// is left. It returns how many were new.
func (st *Store) PutSpanRecords(ctx context.Context, spans []store.SpanRecord) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		n = 0
		for _, s := range spans {
			tag, err := tx.Exec(ctx, `INSERT INTO otel_spans (trace_id, span_id, conversation_id, service, received_at, span)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, s.TraceID, s.SpanID, s.ConversationID, s.Service, s.ReceivedAt, s.Body)
			if err != nil {
				return fmt.Errorf("span %s/%s: %w", s.TraceID, s.SpanID, err)
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	return n, translate(err, "copy spans")
}

// CountSpans returns how many spans the store holds.
func (st *Store) CountSpans(ctx context.Context) (int64, error) {
	var n int64
	err := st.pool.QueryRow(ctx, "SELECT count(*) FROM otel_spans").Scan(&n)
	return n, translate(err, "count spans")
}

// PutNoteRecords stores notes as they are — ids, times, authors, the seqs
// they apply from and, for removed ones, when they were removed — in the
// order given (a session's notes keep their order): prism migrate's copy.
// Each is checked as PutNote checks a note; a note whose id is stored
// already is left. It returns how many were new.
func (st *Store) PutNoteRecords(ctx context.Context, ns []notes.Note) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		n = 0
		for _, x := range ns {
			data, facts, err := notes.Check(notes.Input{Session: x.Session, Kind: x.Kind, CallID: x.CallID, Author: x.Author, Data: x.Data})
			if err != nil {
				return fmt.Errorf("note %s of session %s: %w", x.ID, x.Session, err)
			}
			var removed *int64
			if x.RemovedAt != 0 {
				removed = &x.RemovedAt
			}
			tag, err := tx.Exec(ctx, `INSERT INTO notes (id, session_id, kind, call_id, at_seq, time, author, data, label, commented, removed_at, removed_at_seq)
				VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
				x.ID, x.Session, x.Kind, x.CallID, x.AtSeq, x.Time, x.Author, string(data), facts.Label, facts.Commented, removed, x.RemovedAtSeq)
			if err != nil {
				return fmt.Errorf("note %s of session %s: %w", x.ID, x.Session, err)
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	return n, translate(err, "copy notes")
}

// PutOwnerLogins stores owner logins (a login stored already keeps its
// expiry): prism migrate's copy, so a browser signed in stays signed in.
func (st *Store) PutOwnerLogins(ctx context.Context, logins []store.OwnerLogin) error {
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		for _, l := range logins {
			if _, err := tx.Exec(ctx, "INSERT INTO owner_logins (id_hash, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING", l.IDHash[:], l.ExpiresAt); err != nil {
				return err
			}
		}
		return nil
	})
	return translate(err, "copy owner logins")
}
