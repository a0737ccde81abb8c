package store

import "prism/core"

// WatchedWrite is what a watcher (sources/watch) writes of a session it
// stored before from a file it reads on: the store checks the session is
// as the watcher left it (WatchedPrefix) instead of reading its log back.
type WatchedWrite struct {
	// Stored is the number of events the watcher stored: the session must
	// hold exactly these.
	Stored int
	// From is the seq of Events[0]: Stored to append; less to rewrite the
	// events from From on (the events a decoder wrote at the end of the
	// file for now — a step still open — that have grown since). A
	// rewrite needs the store's mark at From (Mark).
	From   int
	Events []core.Event
	// Mark is the number of the log's first events that no later write
	// rewrites (From ≤ Mark ≤ From+len(Events)): the store keeps what it
	// derived of them (the session's summary there), so that a later
	// write may rewrite what follows them. -1 keeps the mark the store
	// has (an append whose settled events do not reach From).
	Mark int
}

// WatchedPrefix checks that session id, as stored (exists, its source, its
// header JSON and its number of events), is what a watcher that wrote
// header hj and stored events left: what follows needs no reading of the
// log back. A difference is a core.CodeConflict error naming it.
func WatchedPrefix(id string, exists bool, source, header, hj string, events, stored int) error {
	switch {
	case !exists:
		return core.Errorf(core.CodeConflict, "write to watched session %s: it is not stored", id)
	case source != SourceWatch:
		return core.Errorf(core.CodeConflict, "write to watched session %s: its source is %s, not %s", id, source, SourceWatch)
	case header != hj:
		return core.Errorf(core.CodeConflict, "write to watched session %s: its stored header differs from the file's", id)
	case events != stored:
		return core.Errorf(core.CodeConflict, "write to watched session %s: it holds %d events, not the %d written from its file", id, events, stored)
	}
	return nil
}

// CheckWatchedWrite refuses a WatchedWrite whose numbers do not fit
// together (core.CodeInvalid).
func CheckWatchedWrite(id string, w WatchedWrite) error {
	switch {
	case w.From < 0 || w.From > w.Stored:
		return core.Errorf(core.CodeInvalid, "write to watched session %s: events from seq %d, but %d are stored", id, w.From, w.Stored)
	case w.Mark == -1 && w.From < w.Stored:
		return core.Errorf(core.CodeInvalid, "write to watched session %s: a rewrite from seq %d must set its mark", id, w.From)
	case w.Mark != -1 && (w.Mark < w.From || w.Mark > w.From+len(w.Events)):
		return core.Errorf(core.CodeInvalid, "write to watched session %s: mark %d is outside the events written (%d–%d)", id, w.Mark, w.From, w.From+len(w.Events))
	}
	return nil
}
