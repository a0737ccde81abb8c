package pgstore

import (
	"context"
	"sync"

	"prism/core"
	"prism/sources/dsh"
	"prism/store"
)

// deletedSet is the sessions deleted through one Store during its run.
type deletedSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

// mark records ids as deleted (gone) or created again.
func (d *deletedSet) mark(gone bool, ids ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		if !gone {
			delete(d.ids, id)
			continue
		}
		if d.ids == nil {
			d.ids = map[string]bool{}
		}
		d.ids[id] = true
	}
}

func (d *deletedSet) has(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ids[id]
}

// SyncWatched makes a watched session's log h plus events (SyncLog with
// source watch and replace set), unless the session was deleted through
// this store during its run: then it writes nothing and reports
// store.ImportSkipped (sources/watch.Store). The session's row is locked
// for the check and the write.
func (st *Store) SyncWatched(ctx context.Context, h core.SessionHeader, events []core.Event) (outcome string, added int, err error) {
	err = st.write(ctx, func(t *wtx) error {
		if err := t.lock(ctx, []string{h.ID}); err != nil {
			return err
		}
		if !t.touched[h.ID].exists && st.deleted.has(h.ID) {
			outcome = store.ImportSkipped
			return nil
		}
		outcome, added, err = t.syncLog(ctx, h, events, store.SourceWatch, true)
		return err
	})
	return outcome, added, err
}

// WasDeleted reports whether session id was deleted through this store and
// not created again since (a watcher skips its file meanwhile).
func (st *Store) WasDeleted(id string) bool { return st.deleted.has(id) }

// AcquireImport takes one of the node's import slots (waiting for it when
// wait is set), so that watching and uploads together stay within the
// import memory bound.
func (st *Store) AcquireImport(ctx context.Context, wait bool) (release func(), err error) {
	return st.imports.Acquire(ctx, wait)
}

// ImportLimits are the decoder limits the store was opened with.
func (st *Store) ImportLimits() dsh.Limits { return st.opts.Limits }
