package db

import (
	"context"
	"database/sql"
	"errors"

	"prism/core"
	"prism/store"
)

// AppendWatched writes what a watcher read on of a watched session it
// stored before (sources/watch.Appender): the store checks the session's
// event count, source and header (store.WatchedPrefix) instead of reading
// its log back, then appends w.Events — or, when w.From is before the
// stored end, first drops the events from w.From on (a step the file's
// end closed for now has grown), restoring the session's summary kept at
// its mark (w.Mark of an earlier write; without one, the summary of the
// events before w.From is read from the log) and taking their documents
// out of the search index. A session deleted through this store during its run
// gets nothing (store.ImportSkipped). What cannot be done so is refused
// with core.CodeConflict naming why (the watcher then reconciles the
// whole log with SyncWatched): the session is not as the watcher left
// it, or a result to drop is filed in the card of a call before it.
func (st *Store) AppendWatched(ctx context.Context, h core.SessionHeader, w store.WatchedWrite) (outcome string, added int, err error) {
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return "", 0, err
	}
	if err := store.CheckWatchedWrite(h.ID, w); err != nil {
		return "", 0, err
	}
	err = st.write(ctx, func(t *wtx) error {
		s, err := t.state(h.ID)
		if err != nil {
			return err
		}
		if s.deleted || !s.exists && st.WasDeleted(h.ID) {
			outcome = store.ImportSkipped
			return nil
		}
		if err := store.WatchedPrefix(h.ID, s.exists, s.source, s.header, hj, int(s.sum.Events), w.Stored); err != nil {
			return err
		}
		evs, err := store.PrepareEvents(h.ID, int64(w.From), w.Events, false)
		if err != nil {
			return err
		}
		mk, marked := st.marks.Holding(h.ID, s.sum)
		outcome = store.ImportExtended
		if w.From < w.Stored {
			sum := mk.Sum
			if !marked || mk.At != w.From {
				// No mark there: the summary of the events before
				// w.From is read from the log (once; the write marks).
				if sum, err = t.summaryBefore(h.ID, w.From); err != nil {
					return err
				}
			}
			if err := t.dropWatchedTail(h.ID, s, w.From, sum); err != nil {
				return err
			}
			outcome = store.ImportReplaced
		} else if len(evs) == 0 {
			outcome = store.ImportUnchanged
		}
		// The summary at the new mark is kept as the events pass it.
		k := len(evs)
		if w.Mark >= 0 {
			k = w.Mark - w.From
		}
		if k > 0 {
			if err := t.insertEvents(h.ID, s, evs[:k], nil); err != nil {
				return err
			}
		}
		if w.Mark >= 0 {
			mk, marked = store.WatchMark{At: w.Mark, Sum: s.sum}, true
		}
		if k < len(evs) {
			if err := t.insertEvents(h.ID, s, evs[k:], nil); err != nil {
				return err
			}
		}
		if marked { // set once the transaction commits (publish)
			mk.After = s.sum
			t.watchMark = &store.PendingMark{ID: h.ID, Mark: mk}
		}
		added = len(evs)
		return nil
	})
	if err != nil {
		if core.ErrorCode(err) != core.CodeConflict {
			st.marks.Drop(h.ID) // a failed commit may still have been made: the mark may not describe the log
		}
		return "", 0, err
	}
	return outcome, added, nil
}

// dropWatchedTail drops session id's events from seq from on and their
// search documents, and restores its summary to sum (the summary after
// the first from events). A result among them that is filed in the card
// of an earlier call cannot be taken out of it: that is a conflict.
func (t *wtx) dropWatchedTail(id string, s *sessState, from int, sum core.Summary) error {
	var one int
	switch err := t.tx.QueryRow(`SELECT 1 FROM search_docs WHERE session_id = ? AND seq >= 0 AND seq < ? AND result_seq >= ? LIMIT 1`, id, from, from).Scan(&one); {
	case err == nil:
		return core.Errorf(core.CodeConflict, "rewrite watched session %s from seq %d: a result there is filed in the card of an earlier call", id, from)
	case !errors.Is(err, sql.ErrNoRows):
		return translate(err, "rewrite watched session "+id)
	}
	for _, q := range []string{
		`DELETE FROM search_fts WHERE docid IN (SELECT id FROM search_docs WHERE session_id = ? AND seq >= ?)`,
		`DELETE FROM search_docs WHERE session_id = ? AND seq >= ?`,
		`DELETE FROM events WHERE session_id = ? AND seq >= ?`,
	} {
		if _, err := t.tx.Exec(q, id, from); err != nil {
			return translate(err, "rewrite watched session "+id)
		}
	}
	if _, err := t.tx.Exec(`UPDATE search_sessions SET through = min(through, ?) WHERE session_id = ?`, from-1, id); err != nil {
		return translate(err, "rewrite watched session "+id)
	}
	s.sum, s.replaced, s.dirty = sum, true, true
	return nil
}

// summaryBefore folds the summary of session id's events before seq from,
// read from its log.
func (t *wtx) summaryBefore(id string, from int) (core.Summary, error) {
	events, err := queryEvents(context.Background(), t.tx, from, eventsSQL+" WHERE session_id = ? AND seq < ? ORDER BY seq", id, from)
	if err != nil {
		return core.Summary{}, translate(err, "rewrite watched session "+id)
	}
	return core.Summarize(events), nil
}
