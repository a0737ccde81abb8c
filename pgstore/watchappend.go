package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/store"
)

// AppendWatched writes what a watcher read on of a watched session it
// stored before (sources/watch.Appender): under the session's row lock,
// the store checks its event count, source and header
// (store.WatchedPrefix) instead of reading its log back, then appends
// w.Events — or, when w.From is before the stored end, first drops the
// events from w.From on (a step the file's end closed for now has
// grown), restoring the session's summary kept at its mark (w.Mark of an
// earlier write; without one, the summary of the events before w.From is
// read from the log), taking their documents out of the search index and
// starting a new generation of the log (other nodes read it again). A
// session deleted through this store during its run gets nothing
// (store.ImportSkipped). What cannot be done so is refused with
// core.CodeConflict naming why (the watcher then reconciles the whole log
// with SyncWatched): the session is not as the watcher left it, or a
// result to drop is filed in the card of a call before it.
func (st *Store) AppendWatched(ctx context.Context, h core.SessionHeader, w store.WatchedWrite) (outcome string, added int, err error) {
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return "", 0, err
	}
	if err := store.CheckWatchedWrite(h.ID, w); err != nil {
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
		if err := store.WatchedPrefix(h.ID, s.exists, s.source, s.header, hj, int(s.sum.Events), w.Stored); err != nil {
			return err
		}
		mk, marked := st.marks.Holding(h.ID, s.sum)
		outcome = store.ImportExtended
		if w.From < w.Stored {
			sum := mk.Sum
			if !marked || mk.At != w.From {
				// No mark there: the summary of the events before
				// w.From is read from the log (once; the write marks).
				var err error
				if sum, err = t.summaryBefore(ctx, h.ID, w.From); err != nil {
					return err
				}
			}
			if err := t.dropWatchedTail(ctx, h.ID, s, w.From, sum); err != nil {
				return err
			}
			outcome = store.ImportReplaced
		} else if len(w.Events) == 0 {
			outcome = store.ImportUnchanged
		}
		// The summary at the new mark is kept as the events pass it.
		k := len(w.Events)
		if w.Mark >= 0 {
			k = w.Mark - w.From
		}
		if k > 0 {
			if err := t.append(h.ID, w.Events[:k]); err != nil {
				return err
			}
		}
		if w.Mark >= 0 {
			mk, marked = store.WatchMark{At: w.Mark, Sum: s.sum}, true
		}
		if k < len(w.Events) {
			if err := t.append(h.ID, w.Events[k:]); err != nil {
				return err
			}
		}
		if marked { // set once the transaction commits (settleMarks)
			mk.After = s.sum
			t.watchMark = &store.PendingMark{ID: h.ID, Mark: mk}
		}
		added = len(w.Events)
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

// dropWatchedTail drops locked session id's events from seq from on and
// their search documents, restores its summary to sum (the summary after
// the first from events) and starts a new generation of its log. A
// result among them that is filed in the card of an earlier call cannot
// be taken out of it: that is a conflict.
func (t *wtx) dropWatchedTail(ctx context.Context, id string, s *sessState, from int, sum core.Summary) error {
	if t.ev.len() > 0 || !t.idx.empty() {
		return errors.New("rewrite watched session " + id + ": events of this transaction are not written yet")
	}
	var one int
	switch err := t.tx.QueryRow(ctx, `SELECT 1 FROM search_docs WHERE session_id = $1 AND seq >= 0 AND seq < $2 AND result_seq >= $2 LIMIT 1`, id, from).Scan(&one); {
	case err == nil:
		return core.Errorf(core.CodeConflict, "rewrite watched session %s from seq %d: a result there is filed in the card of an earlier call", id, from)
	case !errors.Is(err, pgx.ErrNoRows):
		return translate(err, "rewrite watched session "+id)
	}
	for _, q := range []string{
		`DELETE FROM search_docs WHERE session_id = $1 AND seq >= $2`,
		`DELETE FROM events WHERE session_id = $1 AND seq >= $2`,
	} {
		if _, err := t.tx.Exec(ctx, q, id, from); err != nil {
			return translate(err, "rewrite watched session "+id)
		}
	}
	s.sum, s.gen, s.replaced, s.dirty = sum, s.gen+1, true, true
	return nil
}

// summaryBefore folds the summary of session id's events before seq from,
// read from its log.
func (t *wtx) summaryBefore(ctx context.Context, id string, from int) (core.Summary, error) {
	events, err := queryEvents(ctx, t.tx, from, eventsSQL+" WHERE session_id = $1 AND seq < $2 ORDER BY seq", id, from)
	if err != nil {
		return core.Summary{}, translate(err, "rewrite watched session "+id)
	}
	return core.Summarize(events), nil
}

// settleMarks keeps the watch marks once a transaction committed changes
// (store.WatchMarks): a session it deleted, created or replaced loses its
// mark, then set, the mark its watched write left (nil: none), is kept.
func (st *Store) settleMarks(changes []change, set *store.PendingMark) {
	for _, c := range changes {
		if c.Deleted || c.Created || c.Replaced {
			st.marks.Drop(c.SessionID)
		}
	}
	if set != nil {
		st.marks.Put(set.ID, set.Mark)
	}
}
