package store

import (
	"reflect"
	"sync"

	"prism/core"
)

// WatchMarks are the summaries of watched sessions at their marks
// (WatchedWrite.Mark), by session id, kept by a store in memory: a
// rewrite of what follows a mark restores the summary there instead of
// reading the log back. A mark describes the log its watched write left:
// it is set once that write's transaction commits (PendingMark), holds
// only while the session's stored summary is still the one that write
// left (WatchMark.After, Holding: another writer's append voids it), and
// is dropped (Drop) when a committed transaction deletes, creates or
// replaces the session other than by the watched write itself — a log
// replaced, or deleted and created again, may end with the same summary
// and still differ before the mark. Safe for concurrent use; the zero
// value is empty.
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

// PendingMark is the mark a watched write sets, kept by its transaction
// until it commits (then Put).
type PendingMark struct {
	ID   string
	Mark WatchMark
}

// Holding returns session id's mark if it holds: the session's stored
// summary, sum, is still the one the mark's watched write left.
func (w *WatchMarks) Holding(id string, sum core.Summary) (WatchMark, bool) {
	mk, ok := w.Get(id)
	if !ok || !reflect.DeepEqual(mk.After, sum) {
		return WatchMark{}, false
	}
	return mk, true
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

// Len is the number of sessions with a mark.
func (w *WatchMarks) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
