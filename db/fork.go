package db

import (
	"context"
	"fmt"

	"prism/core"
	"prism/core/notes"
	"prism/store"
)

// CreateFork creates a forked session whole, in one transaction: its row
// (h, source live), its seed and the fork note on its source (note). All
// of it commits or none of it: a taken id is store.ForkIDTaken, an unknown
// source core.CodeNotFound, a seed the store refuses the append's error,
// each naming what failed.
func (st *Store) CreateFork(ctx context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error {
	data, facts, err := notes.Check(note)
	if err != nil {
		return fmt.Errorf("fork note on session %s: %w", note.Session, err)
	}
	if err := store.ValidateHeader(h); err != nil {
		return err
	}
	now := st.now().UnixMilli()
	return st.write(ctx, func(t *wtx) error {
		s, err := t.state(h.ID)
		if err != nil {
			return err
		}
		if s.exists {
			return store.ForkIDTaken(note.Session, h.ID)
		}
		if err := t.insertSession(s, h, store.SourceLive); err != nil {
			return err
		}
		evs, err := store.PrepareEvents(h.ID, 0, seed, false)
		if err != nil {
			return fmt.Errorf("write the seed of fork %s: %w", h.ID, err)
		}
		if err := t.insertEvents(h.ID, s, evs, nil); err != nil {
			return fmt.Errorf("write the seed of fork %s: %w", h.ID, err)
		}
		src, err := t.state(note.Session)
		if err != nil {
			return err
		}
		if !src.exists {
			return store.NotFound(note.Session)
		}
		if _, err := t.addNote(note, src, data, facts, now); err != nil {
			return fmt.Errorf("fork note on session %s: %w", note.Session, err)
		}
		return nil
	})
}
