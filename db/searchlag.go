package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/search"
)

// The search index lags the log. An append commits its events without
// indexing them (the index's pages would cost each small durable commit a
// quarter to two fifths of its time); the writer keeps them, once
// committed, in an in-memory lag per session and files them in an index
// transaction of its own:
//
//   - when the writer has idled indexLagIdle with something lagging (no
//     request came meanwhile): so a session's steps, which come back to
//     back while a model streams or a loop runs, commit without the index's
//     work between them — it is done while the agent waits for its model or
//     its tools — in transactions of at most indexIdleChunk events that
//     stop early for a request that comes meanwhile (fileIdle);
//   - when the lag holds indexLagEvents events or indexLagBytes bytes of
//     event data, whatever the writer is doing: that bounds its memory and
//     the work a search must do first;
//   - before every other write transaction (delete, import, repair,
//     watch…), so those run on an index that is up to date;
//   - before every search (Store.catchUpIndex): no search observes the lag,
//     and a search right after an acknowledged append finds it — unless
//     nothing can lag (Store.indexCurrent: the writer's lag is empty and no
//     other connection committed since it last looked), when the search
//     does not hand off to the writer goroutine at all;
//   - at Close.
//
// search_sessions.through is each session's watermark, moved in the same
// transaction as the documents: every event with seq ≤ through is in the
// index, none after it. An index transaction files, for each session, the
// events after its stored watermark — from the in-memory lag when it holds
// exactly them, else decoded from the stored log (after a crash, after
// another process wrote to the file, after a failed index transaction).
// So an event is filed once, whatever fails or dies in between: a
// document is never lost (Open catches up every session whose log runs
// past its watermark) and never filed twice (the watermark moves with it).
const (
	indexLagIdle   = 20 * time.Millisecond
	indexIdleChunk = 256
	indexLagEvents = 20000
	indexLagBytes  = 16 << 20
)

// searchLag is the writer's record of committed events not yet indexed.
type searchLag struct {
	sessions map[string]*lagLog
	events   int
	bytes    int // the lagging events' data
	// sweep: the in-memory lag may be incomplete or stale (another
	// connection committed, an index transaction failed, the store just
	// opened): the next index transaction looks for every session whose
	// log runs past its watermark and reads their events from the log.
	sweep bool
	// idle is how long the writer waits for a request before it files the
	// lag (indexLagIdle; tests lengthen it).
	idle  time.Duration
	timer *time.Timer
	// skipCloseFlush leaves the lag unfiled at Close, as a crash would
	// (tests only).
	skipCloseFlush bool
	// inline indexes in the append transaction, as prism did before the
	// lag (tests only: the reference the lag's index must equal).
	inline bool
}

// lagLog is a session's committed events awaiting the index, in seq order,
// with the facts the appending session handed over (nil where none) and,
// for an import that files its own events (fileImported), their prepared
// documents (docs[i] is events[i]'s; nil where none: prepared as filed).
// Batches added later wait in more as their commits handed them over (the
// commit's record, store.Commit.Events, which no one changes): a durable
// step's commit neither copies its batch nor grows a long slice — at a few
// thousand lagging events that copy and its garbage were a sizeable part
// of the store's own work on a step. join appends them to events when the
// index reads the log, off the appender's path.
type lagLog struct {
	events []core.Event
	facts  []*core.EventFacts // as long as events
	docs   []*eventDoc
	more   []lagBatch
}

// lagBatch is one commit's events of a session and their facts (nil, or
// one per event, nil where unknown).
type lagBatch struct {
	events []core.Event
	facts  []*core.EventFacts
}

// join appends the batches waiting in more to events and facts. Those
// arrays are the lag's own once join has run (a lagLog made with events
// of a commit gets no more), so appending to them is amortised, as a
// trim's reslicing is.
func (g *lagLog) join() {
	for _, b := range g.more {
		g.events = append(g.events, b.events...)
		for i := range b.events {
			var f *core.EventFacts
			if i < len(b.facts) {
				f = b.facts[i]
			}
			g.facts = append(g.facts, f)
		}
	}
	clear(g.more)
	g.more = g.more[:0]
}

// add records the events a commit appended to session id; it keeps the
// commit's slices, which are never changed after it.
func (l *searchLag) add(id string, events []core.Event, facts []*core.EventFacts) {
	if len(events) == 0 {
		return
	}
	if l.sessions == nil {
		l.sessions = map[string]*lagLog{}
	}
	g := l.sessions[id]
	if g == nil {
		g = &lagLog{}
		l.sessions[id] = g
	}
	g.more = append(g.more, lagBatch{events: events, facts: facts})
	for i := range events {
		l.bytes += len(events[i].Data)
	}
	l.events += len(events)
}

// drop forgets session id's lag: its log was replaced or deleted.
func (l *searchLag) drop(id string) {
	g, ok := l.sessions[id]
	if !ok {
		return
	}
	forget := func(evs []core.Event) {
		l.events -= len(evs)
		for i := range evs {
			l.bytes -= len(evs[i].Data)
		}
	}
	forget(g.events)
	for _, b := range g.more {
		forget(b.events)
	}
	delete(l.sessions, id)
}

// trim forgets session id's lagging events up to seq through: an index
// transaction that yielded filed them.
func (l *searchLag) trim(id string, through int64) {
	g, ok := l.sessions[id]
	if !ok {
		return
	}
	g.join()
	k := 0
	for k < len(g.events) && g.events[k].Seq <= through {
		l.bytes -= len(g.events[k].Data)
		k++
	}
	l.events -= k
	if k == len(g.events) {
		delete(l.sessions, id)
		return
	}
	g.events, g.facts = g.events[k:], g.facts[k:]
}

func (l *searchLag) clear() {
	clear(l.sessions)
	l.events, l.bytes = 0, 0
}

// full reports whether the lag must be filed now, busy or not.
func (l *searchLag) full() bool {
	return l.events >= indexLagEvents || l.bytes >= indexLagBytes
}

// receive waits for the writer's next request. With something lagging it
// files the index's lag once the writer has idled lag.idle (since it last
// served a request, or an appender last committed on its own goroutine),
// or at once when the lag is full: a request that is queued already, or
// comes within lag.idle, is served first. It holds w.mu only while it
// looks at or files the lag, never while it waits.
func (w *writer) receive() (*request, bool) {
	for {
		w.mu.Lock()
		if w.lag.full() {
			w.indexLagLogged("file the search index's lag")
		}
		lagging := w.lag.events > 0
		wait := w.lag.idle - time.Since(w.lastActive)
		w.mu.Unlock()
		if !lagging {
			select {
			case r, ok := <-w.reqs:
				return r, ok
			case <-w.wake: // an appender's own commit left a lag
				continue
			}
		}
		select {
		case r, ok := <-w.reqs:
			return r, ok
		default:
		}
		if w.lag.timer == nil {
			w.lag.timer = time.NewTimer(max(wait, 0))
		} else {
			w.lag.timer.Reset(max(wait, 0))
		}
		select {
		case r, ok := <-w.reqs:
			w.lag.timer.Stop()
			return r, ok
		case <-w.wake:
			w.lag.timer.Stop()
		case <-w.lag.timer.C:
			w.mu.Lock()
			if time.Since(w.lastActive) >= w.lag.idle {
				w.fileIdle()
			}
			w.mu.Unlock()
		}
	}
}

// fileIdle files the lag of an idle writer in transactions of at most
// indexIdleChunk events, until nothing lags or a request is queued: each
// transaction yields to a request that comes while it files, so the
// request waits for one event and the commit of what the transaction filed
// so far, never for the whole lag.
func (w *writer) fileIdle() {
	for w.lag.events > 0 && len(w.reqs) == 0 {
		before, n := w.lag.events, 0
		yield := func() bool {
			n++
			return n >= indexIdleChunk || len(w.reqs) > 0
		}
		if err := w.fileLagAndForget(yield); err != nil {
			w.st.log.Error("file the search index's lag", logkey.Err, err)
			return
		}
		if w.lag.events >= before {
			return // nothing filed: the next trigger tries again
		}
	}
}

// closeIndex files the lag when the store closes.
func (w *writer) closeIndex() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lag.timer != nil {
		w.lag.timer.Stop()
	}
	if !w.lag.skipCloseFlush {
		w.indexLagLogged("file the search index's lag at close")
	}
}

// indexLagLogged runs indexLag, logging a failure: the events stay
// unindexed (the next index transaction reads them from the log) and the
// write that follows goes on.
func (w *writer) indexLagLogged(what string) {
	if err := w.indexLag(); err != nil {
		w.st.log.Error(what, logkey.Err, err)
	}
}

// indexLag files every committed event the index does not hold yet, in one
// transaction. With nothing lagging and no other connection's commit since
// the writer's last transaction it is a no-op that writes nothing.
//
// A failed transaction leaves the index as it was; a session that cannot
// be filed is left behind its log while the others are filed (and its
// failure returned). Either way the in-memory lag is forgotten: the next
// index transaction (the next append's lag coming due, a search, another
// write, Close, Open) reads the missing events from the log. So the writer
// never retries in a loop, and the lag's memory stays bounded.
func (w *writer) indexLag() error {
	return w.fileLagAndForget(nil)
}

// fileLagAndForget is indexLag; with yield, the index transaction stops
// between two events (or two sessions) once yield reports true, commits
// what it filed — each session's watermark moved to its last filed event —
// and keeps the rest of the lag in memory for a later transaction.
func (w *writer) fileLagAndForget(yield func() bool) error {
	if w.noIndex {
		w.lag.clear()
		return nil
	}
	filed, err := w.fileLag(yield)
	if err == nil && filed != nil {
		for id, through := range filed {
			w.lag.trim(id, through)
		}
		return nil
	}
	w.lag.clear()
	w.lag.sweep = err != nil
	return err
}

// fileLag runs the index transaction. filed is not nil only when it
// yielded: the seq through which it filed each session it reached.
//
// The index transaction commits at synchronous=NORMAL (the connection's
// setting is put back before any other transaction): the index is derived
// from the log and its watermark moves with its documents, so a commit
// that a power failure undoes is filed again at Open, and the WAL is
// written in order, so the next FULL commit makes it durable anyway. The
// fsync it saves would otherwise delay the append that waits for it.
func (w *writer) fileLag(yield func() bool) (filed map[string]int64, err error) {
	if w.lag.events == 0 {
		// Nothing of this process lags: look before taking the write lock
		// (which another process may hold for long: an import) whether
		// anything needs filing at all — only after another connection's
		// commit, a failed index transaction or at Open.
		v, err := w.dataVersionNow()
		if err != nil {
			return nil, translate(err, "search index: read data_version")
		}
		if v == w.dataVersion && !w.lag.sweep {
			return nil, nil
		}
		var behind string
		switch err := w.conn.QueryRowContext(context.Background(), behindSQL+" LIMIT 1").Scan(&behind); {
		case errors.Is(err, sql.ErrNoRows):
			// The file as of v is fully indexed: what begin would learn
			// from v is learnt here (the cache is dropped if another
			// connection wrote), and nothing is left to sweep.
			if v != w.dataVersion {
				clear(w.cache)
				w.dataVersion = v
			}
			w.lag.sweep = false
			return nil, nil
		case err != nil:
			return nil, translate(err, "search index: look for sessions behind their log")
		}
	}
	if !w.st.opts.SyncNormal {
		if _, err := w.conn.ExecContext(context.Background(), "PRAGMA synchronous = NORMAL"); err != nil {
			return nil, translate(err, "search index: relax synchronous")
		}
		w.relaxed = true
		defer func() {
			if rerr := w.restoreSync(); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	tx, err := w.beginAsSet() // sets lag.sweep if another connection committed
	if err != nil {
		return nil, err
	}
	t := newWtx(w, tx)
	if yield != nil {
		t.yield, t.filed = yield, map[string]int64{}
	}
	skipped, err := t.indexLag(&w.lag)
	if err != nil {
		tx.Rollback() //nolint:errcheck
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, translate(err, "search index: commit")
	}
	if skipped != nil || !t.yielded {
		return nil, skipped
	}
	return t.filed, nil
}

// restoreSync puts synchronous=FULL back after an index transaction. Until
// it succeeds, begin tries again first and fails the write transaction
// rather than commit it at NORMAL.
func (w *writer) restoreSync() error {
	if !w.relaxed {
		return nil
	}
	// A relaxed import also put off the write-ahead log's checkpoints
	// (beginRelaxed): they run again, at SQLite's default.
	if _, err := w.conn.ExecContext(context.Background(), "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 1000"); err != nil {
		return translate(err, "restore synchronous=FULL")
	}
	w.relaxed = false
	return nil
}

// indexLag files the lag in t: the sessions of the in-memory lag, and with
// l.sweep every session whose stored log runs past its watermark. skipped
// is the failure of a session it could not file (the others are filed; the
// transaction may commit); err ends the transaction.
func (t *wtx) indexLag(l *searchLag) (skipped, err error) {
	ids := make([]string, 0, len(l.sessions))
	for id := range l.sessions {
		ids = append(ids, id)
	}
	if l.sweep {
		behind, err := t.behind()
		if err != nil {
			return nil, err
		}
		ids = append(ids, behind...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for i, id := range ids {
		if i > 0 && t.yield != nil && t.yield() {
			t.yielded = true
		}
		if t.yielded {
			break
		}
		var g *lagLog
		if !l.sweep {
			g = l.sessions[id]
		}
		failed, err := t.catchUpIsolated(id, g)
		if err != nil {
			return nil, err
		}
		if skipped == nil {
			skipped = failed
		}
	}
	return skipped, nil
}

// catchUpIsolated runs catchUp for one session inside a savepoint, so one
// session's trouble does not stop the others. If filing after the
// watermark fails (a watermark behind documents that exist: a file an
// older prism still wrote to after migration 0007, or edited by hand), the
// session's event documents are rebuilt from its log instead; if that
// fails too, the session is left as it was and its failure returned
// (failed): the next index transaction tries again from the log. Only a
// failure of the savepoints themselves ends the transaction (err).
func (t *wtx) catchUpIsolated(id string, g *lagLog) (failed, err error) {
	if _, err := t.tx.Exec("SAVEPOINT catch_up"); err != nil {
		return nil, translate(err, "search index: savepoint")
	}
	if _, first := t.catchUp(id, g); first != nil {
		if _, err := t.tx.Exec("ROLLBACK TO catch_up"); err != nil {
			return nil, translate(err, "search index: roll back to savepoint")
		}
		t.forgetCards(id)
		// The rebuild runs to its end: a yield would leave the session
		// half rebuilt.
		yield := t.yield
		t.yield, t.yielded = nil, false
		delete(t.filed, id)
		defer func() { t.yield = yield }()
		failed = t.unindexEvents(id)
		if failed == nil {
			_, failed = t.catchUp(id, nil)
		}
		if failed != nil {
			if _, err := t.tx.Exec("ROLLBACK TO catch_up"); err != nil {
				return nil, translate(err, "search index: roll back to savepoint")
			}
			t.forgetCards(id)
			t.w.st.log.Error("search index: could not file a session; it stays behind its log until the next try",
				logkey.SessionID, id, logkey.Err, failed)
		} else {
			t.w.st.log.Warn("search index: rebuilt a session's documents from its log", logkey.SessionID, id, logkey.Err, first)
		}
	}
	if _, err := t.tx.Exec("RELEASE catch_up"); err != nil {
		return nil, translate(err, "search index: release savepoint")
	}
	return failed, nil
}

// forgetCards drops the cards of session id this index transaction
// recorded: their rows were rolled back.
func (t *wtx) forgetCards(id string) {
	for k := range t.batchCards {
		if k.session == id {
			delete(t.batchCards, k)
		}
	}
}

// behindSQL selects the sessions whose stored log runs past their
// watermark.
const behindSQL = `SELECT s.id FROM search_sessions x JOIN sessions s ON s.id = x.session_id WHERE s.last_seq > x.through`

// behind lists the sessions whose stored log runs past their watermark.
func (t *wtx) behind() ([]string, error) {
	rows, err := t.tx.Query(behindSQL)
	if err != nil {
		return nil, translate(err, "search index: list the sessions behind their log")
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err, "search index: list the sessions behind their log")
		}
		ids = append(ids, id)
	}
	return ids, translate(rows.Err(), "search index: list the sessions behind their log")
}

// catchUp files session id's events after its watermark and moves the
// watermark to its last event. g, if not nil, holds the events the writer
// committed; they are used when they are exactly the ones missing, else the
// events are read from the log. A session without a watermark (deleted
// since, or not indexed at all: Open's reindexSearch files those) is
// skipped.
func (t *wtx) catchUp(id string, g *lagLog) (int, error) {
	ix := t.index()
	var through, last int64
	switch err := ix.watermark.QueryRow(id).Scan(&through, &last); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, translate(err, "search index: read the watermark of session "+id)
	}
	if last <= through {
		return 0, nil
	}
	var events []core.Event
	var facts []*core.EventFacts
	var docs []*eventDoc
	if g != nil {
		g.join()
	}
	if g != nil && len(g.events) > 0 {
		first, n := g.events[0].Seq, int64(len(g.events))
		if first <= through+1 && g.events[n-1].Seq == last && last-first == n-1 {
			events, facts = g.events[through+1-first:], g.facts[through+1-first:]
			if len(g.docs) == len(g.events) {
				docs = g.docs[through+1-first:]
			}
		}
	}
	if t.batchCards == nil {
		t.batchCards = map[cardKey][]*cardRef{}
	}
	if events == nil {
		var err error
		events, err = queryEvents(context.Background(), t.tx, int(last-through), eventsSQL+" WHERE session_id = ? AND seq > ? ORDER BY seq", id, through)
		if err != nil {
			return 0, translate(err, "search index: load session "+id)
		}
	}
	// Cards left unfiled by a failed filing were rolled back with it.
	t.unfiled = t.unfiled[:0]
	n := len(events)
	for i := range events {
		if i > 0 && t.yield != nil && t.yield() {
			// A request waits: stop here; the watermark says how far.
			t.yielded, n, last = true, i, events[i-1].Seq
			break
		}
		if i < len(docs) && docs[i] != nil {
			if err := t.indexDoc(id, &events[i], docs[i]); err != nil {
				return 0, err
			}
			continue
		}
		var f *core.EventFacts
		if i < len(facts) {
			f = facts[i]
		}
		if err := t.indexEvent(id, &events[i], f); err != nil {
			return 0, err
		}
	}
	if err := t.fileUnfiled(); err != nil {
		return 0, err
	}
	if _, err := ix.setWatermark.Exec(last, id); err != nil {
		return 0, translate(err, "search index: move the watermark of session "+id)
	}
	if t.filed != nil {
		t.filed[id] = last
	}
	return n, nil
}

// catchUpIndex asks the writer to file the index's lag, so that a search
// that follows sees every event committed before it. It writes nothing
// when nothing lags.
func (st *Store) catchUpIndex(ctx context.Context) error {
	st.w.indexRequests.Add(1)
	return st.submit(ctx, &request{kind: kindIndex})
}

// indexCurrent reports, on the caller's goroutine, whether the index
// already holds every event committed before the call, so that a search
// need not hand off to the writer goroutine (catchUpIndex): nothing of this
// process lags (its writer's lag is empty and it has nothing to sweep) and
// no other connection — another process's writer: an import, a watch, a
// second server — committed since this writer last looked (PRAGMA
// data_version on the writer's own connection, which moves with every
// commit but the connection's own). It is the test fileLag makes first,
// made without the hand-off; false (the writer busy, a lag, another
// connection's commit, any error) sends the caller to the writer.
//
// It takes w.mu only if it is free: an appender or the writer goroutine
// holding it may be committing events that the caller must not miss once
// acknowledged — those are in the lag before w.mu is released.
func (st *Store) indexCurrent() bool {
	w := st.w
	if w == nil || !w.mu.TryLock() {
		return false
	}
	defer w.mu.Unlock()
	if w.noIndex || w.lag.events > 0 || w.lag.sweep || st.queue.Closed() {
		return false
	}
	v, err := w.dataVersionNow()
	if err != nil {
		return false // the writer reads it again, and reports what is wrong
	}
	return v == w.dataVersion
}

// cardKey names the cards of one call id of a session.
type cardKey struct{ session, callID string }

// cardRef is a card an index transaction filed, and whether it still waits
// for its result.
type cardRef struct {
	doc     int64
	waiting bool
	plain   search.Plain // what its call's snippet is made from
	// unfiled: its FTS row and its text are not written yet; cols are
	// its call's terms, secs its call's sections (insertDoc). Written with
	// its result's, or by fileUnfiled.
	unfiled bool
	cols    columns
	secs    []search.Section
}

// openCard finds, among the cards of callID that this index transaction
// filed, the latest still waiting for its result. They are the session's
// newest, so when one waits it is the one the transcript pairs a result
// with; ok false sends the caller to the stored cards.
func (t *wtx) openCard(id, callID string) (ref *cardRef, ok bool) {
	refs := t.batchCards[cardKey{id, callID}]
	for i := len(refs) - 1; i >= 0; i-- {
		if refs[i].waiting {
			refs[i].waiting = false
			return refs[i], true
		}
	}
	return nil, false
}

// fileUnfiled writes the FTS rows and texts of the cards whose terms still
// wait for their result (insertDoc), in docid order: a session's filing ends with
// every document it wrote in the index.
func (t *wtx) fileUnfiled() error {
	ix := t.index()
	for _, ref := range t.unfiled {
		if !ref.unfiled {
			continue
		}
		ref.unfiled = false
		if _, err := ix.insFTS.Exec(ref.doc, ref.cols[0], ref.cols[1], ref.cols[2], ref.cols[3]); err != nil {
			return translate(err, fmt.Sprintf("search index: file card %d", ref.doc))
		}
		text := encodeText(ref.secs)
		ref.secs = nil
		if text != nil {
			if _, err := ix.insText.Exec(ref.doc, text, nil); err != nil {
				return translate(err, fmt.Sprintf("search index: file the text of card %d", ref.doc))
			}
		}
	}
	t.unfiled = t.unfiled[:0]
	return nil
}

// indexInline files the events t appended in t itself, pairing results with
// their cards by query alone: the index as it was kept before the lag
// (lag.inline, tests only).
func (t *wtx) indexInline() error {
	for _, id := range t.order {
		s := t.touched[id]
		if !s.exists || s.deleted || len(s.appended) == 0 {
			continue
		}
		for i := range s.appended {
			if err := t.indexEvent(id, &s.appended[i], s.appendedFacts[i]); err != nil {
				return err
			}
		}
		if err := t.fileUnfiled(); err != nil {
			return err
		}
		if _, err := t.index().setWatermark.Exec(s.sum.LastSeq, id); err != nil {
			return translate(err, "search index: move the watermark of session "+id)
		}
	}
	return nil
}
