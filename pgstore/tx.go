package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"prism/core"
	"prism/store"
)

// sessState is a session row as a write transaction locked it, with the
// changes the transaction made to it.
type sessState struct {
	exists    bool
	header    string
	source    string
	createdAt int64
	sum       core.Summary
	// lockedSeq is last_seq as locked: the row's final update checks it
	// is unchanged (it cannot change under the lock; the check makes the
	// invariant visible in the statement).
	lockedSeq int64
	gen       int32

	dirty, created, replaced bool
	// retitled: the title changed; reindexed: the search documents were
	// rebuilt (either way the session's own document is rewritten).
	retitled, reindexed bool
	// deleted: the transaction deleted the session (its row is gone).
	deleted  bool
	parent   string
	appended []core.Event
}

// updatedAt is the row's sort key: the latest event time, or the creation
// time of an empty session.
func (s *sessState) updatedAt() int64 {
	if s.sum.Events == 0 {
		return s.createdAt
	}
	return s.sum.LastTime
}

// eventCols are events to insert, column by column (one unnest insert).
type eventCols struct {
	session, typ, data, surface, sources, call []string
	seq, time                                  []int64
	ignorable                                  []bool
}

func (c *eventCols) add(id string, e *core.Event, callID string) {
	c.session = append(c.session, id)
	c.seq = append(c.seq, e.Seq)
	c.typ = append(c.typ, e.Type)
	c.time = append(c.time, e.Time)
	c.data = append(c.data, string(e.Data))
	c.ignorable = append(c.ignorable, e.Ignorable)
	surface, sources := "", ""
	if e.SurfaceOp != nil {
		surface = store.EncodeSurfaceOp(e.SurfaceOp)
	}
	if e.SourceEventSeqs != nil {
		sources = store.EncodeSeqs(e.SourceEventSeqs)
	}
	c.surface = append(c.surface, surface)
	c.sources = append(c.sources, sources)
	c.call = append(c.call, callID)
}

func (c *eventCols) len() int { return len(c.seq) }

// wtx is one write transaction: it locks session rows, applies creates and
// appends to their state in memory, and writes everything in one round
// trip at flush, NOTIFY included.
type wtx struct {
	tx      pgx.Tx
	touched map[string]*sessState
	order   []string
	ev      eventCols
	idx     searchIndex
	// late are writes that need the flushed rows (notes of a session the
	// transaction creates); they run after the flush, before the commit.
	late []func(ctx context.Context) error
	// watchMark is the watch mark an AppendWatched of the transaction
	// sets once it commits (Store.settleMarks; nil: none).
	watchMark *store.PendingMark
}

func newWtx(tx pgx.Tx) *wtx { return &wtx{tx: tx, touched: map[string]*sessState{}} }

// The session row as a write transaction reads it.
const stateCols = `id, header, source, created_at, summary_version, title, titled, status, one_shot, last_seq,
	turns, steps, calls, results, errors, input_tokens, output_tokens, first_time, last_time, awaiting, log_gen, model, model_usage`

// lock locks the rows of the sessions ids (in id order, so that two
// transactions never wait for each other in a cycle) and reads their
// state; a missing row is a state that does not exist. A row written under
// an older core.SummaryVersion has its log folded afresh (and is rewritten
// at flush).
func (t *wtx) lock(ctx context.Context, ids []string) error {
	var need []string
	seen := make(map[string]bool, len(ids)) // a file may hold thousands of sessions
	for _, id := range ids {
		if _, ok := t.touched[id]; !ok && !seen[id] {
			seen[id] = true
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return nil
	}
	slices.Sort(need)
	rows, err := t.tx.Query(ctx, "SELECT "+stateCols+" FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE", need)
	if err != nil {
		return translate(err, "lock sessions")
	}
	var stale []string
	for rows.Next() {
		s := &sessState{exists: true}
		var id string
		var version int
		var usage string
		sm := &s.sum
		if err := rows.Scan(&id, &s.header, &s.source, &s.createdAt, &version, &sm.Title, &sm.Titled, &sm.Status, &sm.OneShot, &sm.LastSeq,
			&sm.Turns, &sm.Steps, &sm.Calls, &sm.Results, &sm.Errors, &sm.InputTokens, &sm.OutputTokens, &sm.FirstTime, &sm.LastTime, &sm.Awaiting, &s.gen,
			&sm.Model, &usage); err != nil {
			rows.Close()
			return translate(err, "lock sessions")
		}
		var err error
		if sm.Models, err = store.DecodeModelUsage(usage); err != nil {
			rows.Close()
			return fmt.Errorf("lock sessions: session %s: stored model usage: %w", id, err)
		}
		sm.Events = sm.LastSeq + 1
		s.lockedSeq = sm.LastSeq
		if version != core.SummaryVersion {
			stale = append(stale, id)
		}
		t.touch(id, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(err, "lock sessions")
	}
	for _, id := range need {
		if _, ok := t.touched[id]; !ok {
			t.touch(id, &sessState{sum: core.NewSummary(), lockedSeq: -1})
		}
	}
	for _, id := range stale {
		events, err := t.loadEvents(ctx, id)
		if err != nil {
			return err
		}
		s := t.touched[id]
		s.sum, s.dirty = core.Summarize(events), true
	}
	return nil
}

func (t *wtx) touch(id string, s *sessState) {
	t.touched[id] = s
	t.order = append(t.order, id)
}

// insertSession records a new session (locked first, so its absence is known).
func (t *wtx) insertSession(h core.SessionHeader, source string) error {
	s := t.touched[h.ID]
	if s == nil {
		return fmt.Errorf("create session %s: not locked", h.ID)
	}
	if s.exists {
		return core.Errorf(core.CodeConflict, "create session %s: it already exists", h.ID)
	}
	if err := store.ValidateHeader(h); err != nil {
		return err
	}
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return err
	}
	*s = sessState{exists: true, header: hj, source: source, createdAt: h.CreatedAt, sum: core.NewSummary(), lockedSeq: -1,
		created: true, dirty: true, parent: h.ChildOf()}
	return nil
}

// append validates an append against the locked state and applies it. An
// error is the request's own: nothing of it is kept.
func (t *wtx) append(id string, events []core.Event) error {
	return t.appendChecked(id, events, false, nil)
}

// appendChecked is append for events whose data a core.Session checked
// (checked set: it is not checked again) and whose facts it knows
// (facts[i] when given and not nil: not decoded again).
func (t *wtx) appendChecked(id string, events []core.Event, checked bool, facts []*core.EventFacts) error {
	s := t.touched[id]
	if s == nil || !s.exists {
		return store.NotFound(id)
	}
	evs, err := store.PrepareEvents(id, s.sum.LastSeq+1, events, checked)
	if err != nil {
		return err
	}
	for i := range evs {
		e := &evs[i]
		var f core.EventFacts
		if i < len(facts) && facts[i] != nil {
			f = *facts[i] // the session knew them from the appended value
		} else {
			f = core.FactsOf(e) // one decode: the summary's facts and the call id
		}
		title := s.sum.Title
		s.sum.ApplyFacts(e, &f)
		s.retitled = s.retitled || s.sum.Title != title
		t.ev.add(id, e, f.CallID())
		t.idx.indexEvent(id, e, &f)
	}
	s.appended = append(s.appended, evs...)
	s.dirty = true
	return nil
}

// replaceSession drops a session's events and header (a watched file that was
// rewritten, an import --replace); the caller appends the new log. The
// session's source becomes source.
func (t *wtx) replaceSession(ctx context.Context, id string, h core.SessionHeader, source string) error {
	s := t.touched[id]
	if t.ev.len() > 0 || !t.idx.empty() {
		return fmt.Errorf("replace session %s: events of this transaction are not written yet", id)
	}
	hj, err := store.HeaderJSON(h)
	if err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, "DELETE FROM events WHERE session_id = $1", id); err != nil {
		return translate(err, "replace session "+id)
	}
	if err := t.unindexEvents(ctx, id); err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, "UPDATE sessions SET header = $1, parent_id = NULLIF($2, ''), created_at = $3, source = $4 WHERE id = $5",
		hj, h.ChildOf(), h.CreatedAt, source, id); err != nil {
		return translate(err, "replace session "+id)
	}
	*s = sessState{exists: true, header: hj, source: source, createdAt: h.CreatedAt, sum: core.NewSummary(), lockedSeq: s.lockedSeq,
		gen: s.gen + 1, replaced: true, dirty: true, created: s.created}
	return nil
}

// deleteSession deletes a locked session with everything that belongs to it
// (events, search documents, share links, commands: ON DELETE CASCADE).
func (t *wtx) deleteSession(ctx context.Context, id string) error {
	if _, err := t.tx.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id); err != nil {
		return translate(err, "remove session "+id)
	}
	t.touched[id] = &sessState{sum: core.NewSummary(), lockedSeq: -1}
	return nil
}

// loadEvents reads a session's stored log inside the transaction.
func (t *wtx) loadEvents(ctx context.Context, id string) ([]core.Event, error) {
	events, err := queryEvents(ctx, t.tx, 256, eventsSQL+" WHERE session_id = $1 ORDER BY seq", id)
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	return events, nil
}

// flush writes the transaction's creates, events and session rows and
// NOTIFYs the other nodes, in one round trip.
func (t *wtx) flush(ctx context.Context) error {
	var b pgx.Batch
	var created, dirty, own []*sessState
	var cid, dids, oids, notes []string
	for _, id := range t.order {
		s := t.touched[id]
		if s.created {
			created, cid = append(created, s), append(cid, id)
		}
		if s.exists && (s.created || s.replaced || s.retitled || s.reindexed) {
			own, oids = append(own, s), append(oids, id)
		}
		if s.dirty {
			dirty, dids = append(dirty, s), append(dids, id)
		}
		switch {
		case s.deleted:
			notes = append(notes, id+" "+deletedNote)
		case s.created || s.replaced || len(s.appended) > 0:
			notes = append(notes, id+" "+strconv.FormatInt(s.sum.LastSeq, 10))
		}
	}
	// stmts are the batch's statements, in order.
	type stmt struct {
		what  string
		check func(pgconn.CommandTag) error
	}
	var stmts []stmt
	if len(created) > 0 {
		hdr, parent, source := make([]string, len(created)), make([]string, len(created)), make([]string, len(created))
		at := make([]int64, len(created))
		for i, s := range created {
			hdr[i], parent[i], source[i], at[i] = s.header, s.parent, s.source, s.createdAt
		}
		stmts = append(stmts, stmt{what: "create sessions"})
		b.Queue(`INSERT INTO sessions (id, header, parent_id, source, created_at, updated_at, summary_version)
			SELECT id, header, NULLIF(parent, ''), source, at, at, $6 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(id, header, parent, source, at)`,
			cid, hdr, parent, source, at, core.SummaryVersion)
	}
	if t.ev.len() > 0 {
		c := &t.ev
		stmts = append(stmts, stmt{what: "append events"})
		b.Queue(`INSERT INTO events (session_id, seq, type, time, data, ignorable, surface_op, source_event_seqs, call_id)
			SELECT s, q, ty, ti, d, i, NULLIF(so, ''), NULLIF(se, ''), NULLIF(ca, '')
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::boolean[], $7::text[], $8::text[], $9::text[])
				AS u(s, q, ty, ti, d, i, so, se, ca)`,
			c.session, c.seq, c.typ, c.time, c.data, c.ignorable, c.surface, c.sources, c.call)
	}
	if len(t.idx.docs) > 0 {
		stmts = append(stmts, stmt{what: "index events for search"})
		t.idx.queueDocs(&b)
	}
	for range t.idx.results {
		stmts = append(stmts, stmt{what: "index a tool result for search"})
	}
	t.idx.queueResults(&b)
	if len(own) > 0 {
		stmts = append(stmts, stmt{what: "index sessions for search"})
		queueSessionDocs(&b, oids, own)
	}
	if len(dirty) > 0 {
		n := len(dirty)
		locked, last, turns, steps, calls, results, errs, in, out, first, lastT, upd, awaiting := make([]int64, n), make([]int64, n), make([]int64, n),
			make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n),
			make([]int64, n)
		title, status, model, usage := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		titled, oneShot := make([]bool, n), make([]bool, n)
		gen := make([]int32, n)
		for i, s := range dirty {
			sm := &s.sum
			locked[i], last[i], turns[i], steps[i], calls[i], results[i], errs[i] = s.lockedSeq, sm.LastSeq, sm.Turns, sm.Steps, sm.Calls, sm.Results, sm.Errors
			in[i], out[i], first[i], lastT[i], upd[i], awaiting[i] = sm.InputTokens, sm.OutputTokens, sm.FirstTime, sm.LastTime, s.updatedAt(), sm.Awaiting
			title[i], status[i], titled[i], oneShot[i], gen[i], model[i] = sm.Title, sm.Status, sm.Titled, sm.OneShot, s.gen, sm.Model
			var err error
			if usage[i], err = store.EncodeModelUsage(sm.Models); err != nil {
				return err
			}
		}
		stmts = append(stmts, stmt{what: "update sessions", check: func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() != int64(len(dirty)) {
				return core.Errorf(core.CodeConflict, "update sessions: %d of %d rows moved under the lock", int64(len(dirty))-tag.RowsAffected(), len(dirty))
			}
			return nil
		}})
		b.Queue(`UPDATE sessions s SET summary_version = $1, title = u.title, titled = u.titled, status = u.status, one_shot = u.one_shot,
				last_seq = u.last_seq, turns = u.turns, steps = u.steps, calls = u.calls, results = u.results, errors = u.errors,
				input_tokens = u.input_tokens, output_tokens = u.output_tokens, first_time = u.first_time, last_time = u.last_time,
				updated_at = u.updated_at, log_gen = u.log_gen, awaiting = u.awaiting, model = u.model, model_usage = u.model_usage
			FROM unnest($2::text[], $3::bigint[], $4::text[], $5::boolean[], $6::text[], $7::boolean[], $8::bigint[], $9::bigint[], $10::bigint[],
				$11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[], $19::int[], $20::bigint[],
				$21::text[], $22::text[])
				AS u(id, locked, title, titled, status, one_shot, last_seq, turns, steps, calls, results, errors, input_tokens, output_tokens,
					first_time, last_time, updated_at, log_gen, awaiting, model, model_usage)
			WHERE s.id = u.id AND s.last_seq = u.locked`,
			core.SummaryVersion, dids, locked, title, titled, status, oneShot, last, turns, steps, calls, results, errs, in, out, first, lastT, upd, gen, awaiting,
			model, usage)
	}
	if len(notes) > 0 {
		stmts = append(stmts, stmt{what: "notify"})
		b.Queue("SELECT pg_notify('"+channelEvents+"', n) FROM unnest($1::text[]) AS n", notes)
	}
	if b.Len() == 0 {
		return nil
	}
	br := t.tx.SendBatch(ctx, &b)
	for _, st := range stmts {
		tag, err := br.Exec()
		if err == nil && st.check != nil {
			err = st.check(tag)
		}
		if err != nil {
			br.Close()
			return translate(err, st.what)
		}
	}
	return translate(br.Close(), "write batch")
}

// change is what a committed transaction did to one session.
type change struct {
	store.Commit
	lastSeq int64
	gen     int32
}

// changes lists what the transaction changed, per session.
func (t *wtx) changes() []change {
	var out []change
	for _, id := range t.order {
		s := t.touched[id]
		switch {
		case s.deleted:
			out = append(out, change{Commit: store.Commit{SessionID: id, Deleted: true}})
		case s.created || s.replaced || len(s.appended) > 0:
			out = append(out, change{Commit: store.Commit{SessionID: id, Created: s.created, Replaced: s.replaced, Events: s.appended, Local: true},
				lastSeq: s.sum.LastSeq, gen: s.gen})
		}
	}
	return out
}
