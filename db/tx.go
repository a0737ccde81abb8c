package db

import (
	"database/sql"
	"errors"
	"fmt"
	"unsafe"

	"prism/core"
	"prism/store"
)

// Session statuses (core's, which the status column holds).
const (
	StatusRunning     = core.StatusRunning
	StatusIdle        = core.StatusIdle
	StatusEnded       = core.StatusEnded
	StatusInterrupted = core.StatusInterrupted
)

// sessState is a session row as the writer keeps it: the header, where the
// log comes from, and the log's core.Summary, applied event by event in the
// append transaction (core.Summary holds the rules).
type sessState struct {
	exists bool
	header string
	source string
	sum    core.Summary
	// createdAt is the header's; updated_at is the last event's time, or
	// createdAt while the log is empty.
	createdAt int64

	dirty    bool
	created  bool
	replaced bool
	deleted  bool // the transaction deleted the session (its row is gone)
	retitled bool // the title changed: the session's search document follows
	notes    bool // the transaction wrote one of the session's notes
	appended []core.Event
	// appendedFacts are appended's facts as the appending session handed
	// them over (nil where it did not): the search index files them after
	// the commit (searchlag.go).
	appendedFacts []*core.EventFacts
}

// updatedAt is the row's sort key: the latest event time, or the creation
// time of an empty session.
func (s *sessState) updatedAt() int64 {
	if s.sum.Events == 0 {
		return s.createdAt
	}
	return s.sum.LastTime
}

func (s *sessState) clone() *sessState {
	c := *s
	c.appended = s.appended[:len(s.appended):len(s.appended)]
	c.appendedFacts = s.appendedFacts[:len(s.appendedFacts):len(s.appendedFacts)]
	return &c
}

// The writer's statements on session rows.
const (
	selStateSQL   = `SELECT summary_version, ` + sessionCols + ` FROM sessions WHERE id = ?`
	updSessionSQL = `UPDATE sessions SET summary_version = ?, title = ?, titled = ?, status = ?, one_shot = ?, last_seq = ?,
		turns = ?, steps = ?, calls = ?, results = ?, errors = ?, input_tokens = ?, output_tokens = ?, first_time = ?, last_time = ?,
		awaiting = ?, model = ?, model_usage = ?, updated_at = ? WHERE id = ?`
	insSessionSQL = `INSERT INTO sessions (id, header, parent_id, source, status, created_at, updated_at, summary_version)
		VALUES (?, ?, ?, ?, 'idle', ?, ?, ?)`
)

// wtx is one write transaction of the writer, with copy-on-write session
// state: changes reach the writer's cache only after commit.
type wtx struct {
	w       *writer
	tx      *connTx
	parent  *wtx
	touched map[string]*sessState
	order   []string
	idx     *indexStmts // the search index's statements, bound on first use
	// batchCards are the cards an index transaction filed, by call id
	// (searchlag.go); nil in other transactions.
	batchCards map[cardKey][]*cardRef
	// unfiled are the cards of batchCards whose FTS rows wait for their
	// results, in docid order (insertDoc; written by fileUnfiled at the
	// end of their session's catchUp).
	unfiled []*cardRef
	// yield, set in an index transaction of an idle writer, reports that a
	// request waits: catchUp stops between two events (yielded), and filed
	// records how far it filed each session (searchlag.go).
	yield   func() bool
	yielded bool
	filed   map[string]int64
	// imported, set by an import with ImportOptions.FileIndex, makes
	// finish file the transaction's appended events in the index itself
	// (fileImported), with these prepared documents; filedNow are the
	// sessions it filed, which publish leaves out of the lag.
	imported map[string]importedDocs
	filedNow map[string]bool
	// finished: its children wrote every session's derived values and
	// index inside their savepoints (an import of several files,
	// importBatch), so finish has nothing left to do.
	finished bool
	// bulk: fileImported files each session without a savepoint of its
	// own (FTS4 flushes its pending terms into a new segment at every
	// SAVEPOINT); a failure fails the whole attempt (importBatch).
	bulk bool
	// refiledLater reports a session a later file of the same batch
	// appended to as well, which files it (importBatch): fileImported leaves it.
	refiledLater func(id string) bool
	// watchMark is the watch mark an AppendWatched of the transaction
	// sets once it commits (publish; nil: none).
	watchMark *store.PendingMark
	// The root's tx-bound statements, each bound on first use (most
	// transactions append to a cached session: they need no SELECT or
	// INSERT of a session row); children use their root's.
	sel     *sql.Stmt
	insSess *sql.Stmt
}

func newWtx(w *writer, tx *connTx) *wtx {
	return &wtx{w: w, tx: tx, touched: map[string]*sessState{}}
}

func (t *wtx) child() *wtx {
	return &wtx{w: t.w, tx: t.tx, parent: t, touched: map[string]*sessState{}}
}

// bound returns the root transaction's binding of the writer's statement
// s, kept in the root's slot.
func (t *wtx) bound(slot func(*wtx) **sql.Stmt, s *sql.Stmt) *sql.Stmt {
	r := t
	for r.parent != nil {
		r = r.parent
	}
	p := slot(r)
	if *p == nil {
		*p = r.tx.Stmt(s)
	}
	return *p
}

func (t *wtx) selStmt() *sql.Stmt {
	return t.bound(func(r *wtx) **sql.Stmt { return &r.sel }, t.w.selState)
}

func (t *wtx) insSessStmt() *sql.Stmt {
	return t.bound(func(r *wtx) **sql.Stmt { return &r.insSess }, t.w.insSession)
}

func (t *wtx) mergeInto(p *wtx) {
	for _, id := range t.order {
		if _, ok := p.touched[id]; !ok {
			p.order = append(p.order, id)
		}
		p.touched[id] = t.touched[id]
	}
}

// state returns the transaction's (mutable) state of a session.
func (t *wtx) state(id string) (*sessState, error) {
	if s, ok := t.touched[id]; ok {
		return s, nil
	}
	var base *sessState
	switch c, ok := t.w.cache[id]; {
	case t.parent != nil:
		p, err := t.parent.state(id)
		if err != nil {
			return nil, err
		}
		base = p
	case ok:
		base = c
	default:
		s := &sessState{sum: core.NewSummary()}
		var version int
		info, header, err := scanSessionRaw(t.selStmt().QueryRow(id), &version)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, translate(err, "read session "+id)
		default:
			s.exists, s.header, s.source, s.createdAt, s.sum = true, header, info.Source, info.CreatedAt, info.Summary
			if version != core.SummaryVersion {
				// Written under older rules: fold the log afresh (once;
				// the row is rewritten at commit).
				events, err := t.loadEvents(id)
				if err != nil {
					return nil, err
				}
				s.sum, s.dirty = core.Summarize(events), true
			}
		}
		base = s
	}
	s := base.clone()
	t.touched[id] = s
	t.order = append(t.order, id)
	return s, nil
}

// apply performs one batched request. rejected is the request's own
// failure (nothing was written); dbErr a statement failure.
func (t *wtx) apply(r *request) (rejected, dbErr error) {
	switch r.kind {
	case kindCreate:
		s, err := t.state(r.header.ID)
		if err != nil {
			return nil, err
		}
		if s.exists {
			return core.Errorf(core.CodeConflict, "create session %s: it already exists", r.header.ID), nil
		}
		if err := store.ValidateHeader(r.header); err != nil {
			return err, nil
		}
		return nil, t.insertSession(s, r.header, r.source)
	case kindAppend:
		s, err := t.state(r.sessionID)
		if err != nil {
			return nil, err
		}
		if !s.exists {
			return store.NotFound(r.sessionID), nil
		}
		events, err := store.PrepareEvents(r.sessionID, s.sum.LastSeq+1, r.events, r.checked)
		if err != nil {
			return err, nil
		}
		return nil, t.insertEvents(r.sessionID, s, events, r.facts)
	}
	return fmt.Errorf("unexpected request kind %d", r.kind), nil
}

func (t *wtx) insertSession(s *sessState, h core.SessionHeader, source string) error {
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return err
	}
	var parent any
	if c := h.ChildOf(); c != "" {
		parent = c
	}
	if _, err := t.insSessStmt().Exec(h.ID, hj, parent, source, h.CreatedAt, h.CreatedAt, core.SummaryVersion); err != nil {
		return translate(err, "create session "+h.ID)
	}
	*s = sessState{exists: true, header: hj, source: source, sum: core.NewSummary(), createdAt: h.CreatedAt, created: true, dirty: true}
	return nil
}

// replaceSession drops a session's events and resets its derived values
// (a watched file that was rewritten, an import --replace); the caller
// appends the new log. The session's source becomes source.
func (t *wtx) replaceSession(s *sessState, id string, h core.SessionHeader, source string) error {
	if _, err := t.tx.Exec("DELETE FROM events WHERE session_id = ?", id); err != nil {
		return translate(err, "replace session "+id)
	}
	if err := t.unindexEvents(id); err != nil {
		return err
	}
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return err
	}
	var parent any
	if c := h.ChildOf(); c != "" {
		parent = c
	}
	if _, err := t.tx.Exec("UPDATE sessions SET header = ?, parent_id = ?, created_at = ?, source = ? WHERE id = ?", hj, parent, h.CreatedAt, source, id); err != nil {
		return translate(err, "replace session "+id)
	}
	*s = sessState{exists: true, header: hj, source: source, sum: core.NewSummary(), createdAt: h.CreatedAt, replaced: true, dirty: true, created: s.created}
	return nil
}

// deleteSession removes a session row and its events (crash repair of a
// session that never logged an event). Its search terms go first: search_fts
// (FTS4, no foreign key) is keyed by the search_docs ids the row's deletion
// cascades to, and a stale row would refuse the next document that takes
// a freed id.
func (t *wtx) deleteSession(id string, s *sessState) error {
	if _, err := t.tx.Exec("DELETE FROM search_fts WHERE docid IN (SELECT id FROM search_docs WHERE session_id = ?)", id); err != nil {
		return translate(err, "remove session "+id+": search_fts")
	}
	if _, err := t.tx.Exec("DELETE FROM sessions WHERE id = ?", id); err != nil {
		return translate(err, "remove session "+id)
	}
	*s = sessState{sum: core.NewSummary()}
	return nil
}

// insertRows is the most events one INSERT statement writes: a step's
// events go in a few statements, not one each (each statement costs a
// call into SQLite and a run of its program).
const insertRows = 32

// insertEvents writes events and applies them to the session's summary;
// facts[i], when given and not nil, are events[i]'s facts (else decoded).
// The search index files them after the commit (searchlag.go).
func (t *wtx) insertEvents(id string, s *sessState, events []core.Event, facts []*core.EventFacts) error {
	args := t.w.args[:0]
	defer func() { t.w.args = args[:0] }()
	var idArg any = id // boxed once, not once per event
	first := 0         // the first event args holds
	for i := range events {
		e := &events[i]
		var surface, sources, callID any
		if e.SurfaceOp != nil {
			b, _ := e.SurfaceOp.MarshalJSON()
			surface = string(b)
		}
		if e.SourceEventSeqs != nil {
			sources = store.EncodeSeqs(e.SourceEventSeqs)
		}
		var f core.EventFacts
		var given *core.EventFacts
		if i < len(facts) && facts[i] != nil {
			given = facts[i]
			f = *given // the session knew them from the appended value
		} else {
			f = core.FactsOf(e) // one decode
		}
		title := s.sum.Title
		s.sum.ApplyFacts(e, &f)
		s.retitled = s.retitled || s.sum.Title != title
		if id := f.CallID(); id != "" {
			callID = id
		}
		var ign int64
		if e.Ignorable {
			ign = 1
		}
		// The data is bound as text without a copy of our own: the driver
		// copies it while it binds, and an event's data never changes.
		var data any = ""
		if len(e.Data) > 0 {
			data = unsafe.String(&e.Data[0], len(e.Data))
		}
		args = append(args, idArg, e.Seq, t.w.typeArg(e.Type), e.Time, data, ign, surface, sources, callID)
		if len(args) == eventCols*insertRows || i == len(events)-1 {
			if err := t.insertRows(len(args)/eventCols, args); err != nil {
				return translate(err, fmt.Sprintf("append to session %s: seqs %d–%d", id, events[first].Seq, e.Seq))
			}
			args, first = args[:0], i+1
		}
		// The index takes the facts as handed over (nil: it decodes).
		s.appendedFacts = append(s.appendedFacts, given)
	}
	s.appended = append(s.appended, events...)
	s.dirty = true
	return nil
}

// typeArg is an event type as a statement argument, boxed once per type
// and writer (types are few; the cache stops growing at 256 of them).
func (w *writer) typeArg(typ string) any {
	if a, ok := w.types[typ]; ok {
		return a
	}
	var a any = typ
	if len(w.types) < 256 {
		if w.types == nil {
			w.types = map[string]any{}
		}
		w.types[typ] = a
	}
	return a
}

// insertRows runs the INSERT of n events whose column values args holds,
// with the writer's driver statement for n rows (rawstmt.go).
func (t *wtx) insertRows(n int, args []any) error {
	return t.w.raw.exec(t.w.raw.insEvents[n], args...)
}

// finish writes the derived values of every changed session.
func (t *wtx) finish() error {
	if t.finished {
		return nil
	}
	if err := t.finishSessions(true); err != nil {
		return err
	}
	return t.finishIndex()
}

// finishSessions writes the row of every changed session and, with
// index, the session's own search document when it was created, replaced
// or retitled (an import batch files those later, indexSessions).
func (t *wtx) finishSessions(index bool) error {
	for _, id := range t.order {
		s := t.touched[id]
		if !s.dirty || s.deleted {
			continue
		}
		if index && (s.created || s.replaced || s.retitled) {
			if err := t.indexSession(id, s); err != nil {
				return err
			}
		}
		sm := &s.sum
		usage, err := store.EncodeModelUsage(sm.Models)
		if err != nil {
			return fmt.Errorf("update session %s: %w", id, err)
		}
		if err := t.w.raw.exec(t.w.raw.updSession, int64(core.SummaryVersion), sm.Title, b2i(sm.Titled), sm.Status, b2i(sm.OneShot), sm.LastSeq,
			sm.Turns, sm.Steps, sm.Calls, sm.Results, sm.Errors, sm.InputTokens, sm.OutputTokens, sm.FirstTime, sm.LastTime,
			sm.Awaiting, sm.Model, usage, s.updatedAt(), id); err != nil {
			return translate(err, "update session "+id)
		}
	}
	return nil
}

// finishIndex files the transaction's appended events in the index when
// it does so itself (inline, or an import's prepared documents).
func (t *wtx) finishIndex() error {
	if t.w.lag.inline {
		return t.indexInline()
	}
	if t.imported != nil {
		return t.fileImported()
	}
	return nil
}

// commits describes what the transaction changed, per session.
func (t *wtx) commits() []store.Commit {
	var out []store.Commit
	for _, id := range t.order {
		s := t.touched[id]
		switch {
		case s.deleted:
			out = append(out, store.Commit{SessionID: id, Deleted: true, Local: true})
		case s.created || s.replaced || len(s.appended) > 0 || s.notes:
			out = append(out, store.Commit{SessionID: id, Created: s.created, Replaced: s.replaced, Events: s.appended, Notes: s.notes, Local: true})
		}
	}
	return out
}

// publish moves the committed state into the writer's cache and the
// committed events into the search index's lag, and keeps the store's
// record of deleted sessions and its watch marks (store.WatchMarks: a
// session deleted, created or replaced loses its mark, then the mark the
// transaction's watched write left is set).
func (t *wtx) publish() {
	for _, id := range t.order {
		s := t.touched[id]
		if s.deleted || s.replaced || s.created || !s.exists {
			t.w.lag.drop(id) // what lagged of an old log goes with it
		}
		if s.exists && !s.deleted && !t.w.noIndex && !t.w.lag.inline && !t.filedNow[id] {
			t.w.lag.add(id, s.appended, s.appendedFacts)
		}
	}
	for id, s := range t.touched {
		switch {
		case s.deleted:
			t.w.st.markDeleted(id, true)
		case s.created:
			t.w.st.markDeleted(id, false)
		}
		if s.deleted || s.created || s.replaced {
			t.w.st.marks.Drop(id)
		}
		if s.deleted {
			delete(t.w.cache, id)
			continue
		}
		c := *s
		c.dirty, c.created, c.replaced, c.retitled, c.notes, c.appended, c.appendedFacts = false, false, false, false, false, nil, nil
		t.w.cache[id] = &c
	}
	if m := t.watchMark; m != nil {
		t.w.st.marks.Put(m.ID, m.Mark)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
