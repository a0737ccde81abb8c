package pgstore

import (
	"context"

	"prism/core"
	"prism/store"
)

// AppendWatched appends events to a watched session whose stored log the
// caller knows to be the first from events of its own (sources/watch
// keeps what it wrote): the store checks that with the session's event
// count, source and header, under the session's row lock, instead of
// reading its log back, and appends events (seqs from on). A session
// deleted through this store during its run gets nothing
// (store.ImportSkipped); one that is not stored, is not a watched
// session, has another header or holds another number of events is
// refused with core.CodeConflict, naming which (the watcher then
// reconciles the whole log with SyncWatched).
func (st *Store) AppendWatched(ctx context.Context, h core.SessionHeader, from int, events []core.Event) (outcome string, added int, err error) {
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return "", 0, err
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
		if err := store.WatchedPrefix(h.ID, s.exists, s.source, s.header, hj, int(s.sum.Events), from); err != nil {
			return err
		}
		if len(events) == 0 {
			outcome = store.ImportUnchanged
			return nil
		}
		outcome, added = store.ImportExtended, len(events)
		return t.append(h.ID, events)
	})
	if err != nil {
		return "", 0, err
	}
	return outcome, added, nil
}
