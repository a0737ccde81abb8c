package pgstore

import (
	"context"

	"prism/core"
	"prism/store"
)

// AppendWatched writes what a watcher read on of a watched session it
// stored before (sources/watch.Appender): under the session's row lock,
// the store checks its event count, source and header
// (store.WatchedPrefix) instead of reading its log back, and appends
// w.Events. A session deleted through this store during its run gets
// nothing (store.ImportSkipped). A session not as the watcher left it,
// and a rewrite of the events from w.From on (this store keeps no marks
// yet), are refused with core.CodeConflict naming why: the watcher then
// reconciles the whole log with SyncWatched.
func (st *Store) AppendWatched(ctx context.Context, h core.SessionHeader, w store.WatchedWrite) (outcome string, added int, err error) {
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return "", 0, err
	}
	if err := store.CheckWatchedWrite(h.ID, w); err != nil {
		return "", 0, err
	}
	if w.From < w.Stored {
		return "", 0, core.Errorf(core.CodeConflict, "rewrite watched session %s from seq %d: this store rewrites a watched log whole", h.ID, w.From)
	}
	err = st.write(ctx, func(t *wtx) error {
		if err := t.lock(ctx, []string{h.ID}); err != nil {
			return err
		}
		s := t.touched[h.ID]
		if !s.exists && st.deleted.has(h.ID) {
			outcome = store.ImportSkipped
			return nil
		}
		if err := store.WatchedPrefix(h.ID, s.exists, s.source, s.header, hj, int(s.sum.Events), w.Stored); err != nil {
			return err
		}
		if len(w.Events) == 0 {
			outcome = store.ImportUnchanged
			return nil
		}
		outcome, added = store.ImportExtended, len(w.Events)
		return t.append(h.ID, w.Events)
	})
	if err != nil {
		return "", 0, err
	}
	return outcome, added, nil
}
