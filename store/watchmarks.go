package store

import (
	"sync"

	"prism/core"
)

// WatchMarks are the summaries of watched sessions at their marks
// (WatchedWrite.Mark), by session id, kept by a store in memory: a
// rewrite of what follows a mark restores the summary there instead of
// reading the log back. A mark holds only while the session's stored
// summary is still the one the store's last watched write left
// (WatchMark.After): another writer's write voids it. Safe for
// concurrent use; the zero value is empty.
type WatchMarks struct {
	mu sync.Mutex
	m  map[string]WatchMark
}

// WatchMark is one session's mark.
type WatchMark struct {
	At    int          // the events the mark covers
	Sum   core.Summary // the summary after them
	After core.Summary // the summary the last watched write left: the mark holds while the session's is still it
}

// Get returns session id's mark, if it has one.
func (w *WatchMarks) Get(id string) (WatchMark, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	mk, ok := w.m[id]
	return mk, ok
}

// Put sets session id's mark.
func (w *WatchMarks) Put(id string, mk WatchMark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]WatchMark{}
	}
	w.m[id] = mk
}

// Drop forgets session id's mark.
func (w *WatchMarks) Drop(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, id)
}
