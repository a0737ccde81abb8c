package store

import "prism/core"

// WatchedPrefix checks that session id, as stored (exists, its source, its
// header JSON and its number of events), is what a watcher that wrote
// header hj and from events left: an append of the following events
// needs no reading of the log back. A difference is a core.CodeConflict
// error naming it.
func WatchedPrefix(id string, exists bool, source, header, hj string, events, from int) error {
	switch {
	case !exists:
		return core.Errorf(core.CodeConflict, "append to watched session %s: it is not stored", id)
	case source != SourceWatch:
		return core.Errorf(core.CodeConflict, "append to watched session %s: its source is %s, not %s", id, source, SourceWatch)
	case header != hj:
		return core.Errorf(core.CodeConflict, "append to watched session %s: its stored header differs from the file's", id)
	case events != from:
		return core.Errorf(core.CodeConflict, "append to watched session %s: it holds %d events, not the %d written from its file", id, events, from)
	}
	return nil
}
