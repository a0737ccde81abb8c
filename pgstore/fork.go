package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/notes"
	"prism/store"
)

// CreateFork creates a forked session whole, in one transaction: its row
// (h, source live, run by this node: it claims the session first, as
// CreateSession does), its seed and the fork note on its source (note).
// All of it commits or none of it; the rules are the SQLite store's: a
// taken id is store.ForkIDTaken (SESSION_ALREADY_EXISTS) whether the row
// was there when the fork locked it, another fork or create committed it
// while this one ran (the unique violation on the sessions key), or
// another node holds the id's claim (it runs or is creating that session).
func (st *Store) CreateFork(ctx context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error {
	if _, _, err := notes.Check(note); err != nil {
		return fmt.Errorf("fork note on session %s: %w", note.Session, err)
	}
	if err := store.ValidateHeader(h); err != nil {
		return err
	}
	settle, err := st.own.claim(ctx, h.ID)
	if err != nil {
		if errors.Is(err, errClaimedElsewhere) {
			return store.ForkIDTaken(note.Session, h.ID)
		}
		return err
	}
	created := false
	defer func() { settle(created) }() // deferred: a panic below settles too
	now := st.now().UnixMilli()
	err = st.write(ctx, func(t *wtx) error {
		if err := t.lock(ctx, []string{h.ID}); err != nil {
			return err
		}
		if t.touched[h.ID].exists {
			return store.ForkIDTaken(note.Session, h.ID)
		}
		if err := t.insertSession(h, store.SourceLive); err != nil {
			return err
		}
		if err := t.append(h.ID, seed); err != nil {
			return fmt.Errorf("write the seed of fork %s: %w", h.ID, err)
		}
		var lastSeq int64
		err := t.tx.QueryRow(ctx, "SELECT last_seq FROM sessions WHERE id = $1 FOR SHARE", note.Session).Scan(&lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NotFound(note.Session)
		}
		if err != nil {
			return translate(err, "read session "+note.Session)
		}
		if _, err := insertNote(ctx, t.tx, note, lastSeq, now); err != nil {
			return fmt.Errorf("fork note on session %s: %w", note.Session, translate(err, "write the note"))
		}
		return nil
	})
	created = err == nil
	if _, taken := takenSession(err); taken {
		return store.ForkIDTaken(note.Session, h.ID)
	}
	return err
}
