package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"prism/core"
	"prism/core/memrelease"
	"prism/core/search"
	"prism/sources/dsh"
	"prism/store"
)

// ImportFile imports a session log file: prism JSONL (one session or many,
// each header line starting the next), dsh session.jsonl,
// session.jsonl.zstd or a dsh export .zip (the session and its subagents,
// each its own session linked to its parent), detected by content. A dsh
// session keeps its id.
//
// The whole file commits in one transaction or not at all, however many
// sessions it holds (their decoded events, and a fixed share per session,
// count against Limits.MaxMemoryBytes together). Each log is
// checked first: a record that does not decode, a seq gap, an unknown event
// type without the ignorable marker, or a log core.ValidateLog refuses fails
// the file with one error naming the file, the entry, the frame or line and
// the reason (code core.CodeInvalid). A log whose last turn is open gets
// dsh's crash repair (core.InterruptedTurnClosers) appended, as dsh does
// when it loads such a log, and so ends up interrupted.
//
// Importing a session that is already stored does not duplicate it: if the
// stored log equals the file's (after repair) nothing is written
// (store.ImportUnchanged); if it is a prefix, the rest is appended
// (store.ImportExtended); otherwise the import fails with core.CodeConflict.
func (st *Store) ImportFile(ctx context.Context, path string) ([]store.ImportResult, error) {
	return st.ImportFileWith(ctx, path, store.ImportOptions{})
}

// ImportFileWith is ImportFile with options (--as, --replace). Options
// that cannot apply (As with a file of several sessions, an invalid id)
// fail before anything is written, and so does any error: the store is
// left as it was.
func (st *Store) ImportFileWith(ctx context.Context, path string, o store.ImportOptions) ([]store.ImportResult, error) {
	return st.importReader().ReadFile(ctx, path, o, func(logs []*dsh.Log) ([]store.ImportResult, error) {
		return st.importLogs(ctx, path, logs, o)
	})
}

// Import is ImportFile for a file held by a reader (an upload); name is
// used in errors. JSONL and zstd are decoded as they stream in; a zip is
// first copied to a temporary file.
func (st *Store) Import(ctx context.Context, name string, r io.Reader, size int64) ([]store.ImportResult, error) {
	return st.ImportWith(ctx, name, r, size, store.ImportOptions{})
}

// ImportWith is Import with options, as ImportFileWith.
func (st *Store) ImportWith(ctx context.Context, name string, r io.Reader, size int64, o store.ImportOptions) ([]store.ImportResult, error) {
	return st.importReader().Read(ctx, name, r, size, o, func(logs []*dsh.Log) ([]store.ImportResult, error) {
		return st.importLogs(ctx, name, logs, o)
	})
}

// importReader is how this store's imports read their files: in its
// import slots, releasing memory as releaseMemory says.
func (st *Store) importReader() store.ImportReader {
	return store.ImportReader{Slots: st.imports, Limits: st.opts.Limits, Foreign: st.opts.Foreign, Release: releaseMemory}
}

// BusyError refuses work the store has no capacity for right now (every
// import slot is taken); see store.BusyError.
type BusyError = store.BusyError

// AcquireImport takes an import slot (see store.ImportSlots.Acquire): an
// import holds one while it decodes, and so does a watcher
// (sources/watch) for each file it reads.
func (st *Store) AcquireImport(ctx context.Context, wait bool) (release func(), err error) {
	return st.imports.Acquire(ctx, wait)
}

// releaseMemory ends every import, whether it succeeded or was refused: a
// decode holds up to its memory budget (and a long line's buffer) for a
// moment, and without a release the process would keep that peak until
// the runtime's scavenger gets to it. It asks the process's one policy
// (memrelease.Release: at most one debug.FreeOSMemory per
// memrelease.Interval, the last request honoured at the interval's end),
// so a many-file import pays a forced collection every few seconds, not
// one per file. BenchmarkImportTextHeavy swaps in a release per file.
var releaseMemory = memrelease.Release

// importLogs imports a file's decoded logs in one transaction
// (store.ImportPlan).
func (st *Store) importLogs(ctx context.Context, file string, logs []*dsh.Log, o store.ImportOptions) ([]store.ImportResult, error) {
	plan, err := store.PlanImport(file, logs, o)
	if err != nil {
		return nil, err
	}
	if o.Turn != nil {
		if err := o.Turn(ctx); err != nil {
			return nil, err
		}
	}
	facts, docs := importFacts(plan, o.FileIndex && !st.w.noIndex)
	var results []store.ImportResult
	var queued func()
	if o.Queued != nil {
		follow := false
		for _, p := range plan.Prepared() {
			follow = follow || p.Log.Header.ChildOf() != ""
		}
		queued = func() { o.Queued(follow) }
	}
	err = st.queue.SubmitThen(ctx, &request{kind: kindTx, relaxed: o.Relaxed, fn: func(t *wtx) error {
		if docs != nil {
			t.imported, t.filedNow = docs, map[string]bool{}
		}
		r, err := plan.Run(importTx{t: t, now: st.now, facts: facts})
		results = r
		return err
	}}, queued)
	if err != nil {
		return nil, err
	}
	plan.Done(ctx, st.log, st, results)
	return results, nil
}

// ImportFilesWith imports files in one transaction, each inside a
// savepoint of its own (store.BatchImporter): a bulk import commits, and
// its search index flushes its pending terms, once per batch rather than
// once per file. Each file is decoded and checked as ImportFileWith does,
// in turn, before the transaction; one that fails then is reported and
// left out. In the transaction a file that fails is rolled back to its
// savepoint — none of its sessions, events, notes or index documents are
// kept — and the files around it go on. A failure that is the store's
// (storeFault: the disk full, the database read-only or locked, …) or the
// transaction's (its savepoints, its commit) ends the batch at once: the
// transaction rolls back and every file it held gets a *store.StoreFailed
// with that error, none blamed for it (ctx's own end, the caller's, is
// returned as it is).
func (st *Store) ImportFilesWith(ctx context.Context, paths []string, o store.ImportOptions) []store.FileImport {
	out := make([]store.FileImport, len(paths))
	if o.As != "" && len(paths) != 1 {
		err := core.Errorf(core.CodeInvalid, "import as %q: --as names one session, so it takes one file (got %d)", o.As, len(paths))
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	withDocs := o.FileIndex && !st.w.noIndex
	var files []batchFile
	for i, path := range paths {
		_, err := st.importReader().ReadFile(ctx, path, o, func(logs []*dsh.Log) ([]store.ImportResult, error) {
			plan, err := store.PlanImport(path, logs, o)
			if err != nil {
				return nil, err
			}
			f := batchFile{at: i, path: path, plan: plan}
			f.facts, f.docs = importFacts(plan, withDocs)
			files = append(files, f)
			return nil, nil
		})
		out[i].Err = err
	}
	if len(files) == 0 {
		return out
	}
	if err := st.importBatch(ctx, files, o); err != nil {
		err = fmt.Errorf("import batch of %d files: %w", len(files), err)
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) { // the caller's cancel is not the store's failure
			err = &store.StoreFailed{Err: err}
		}
		for _, f := range files {
			out[f.at].Err = err
		}
		return out
	}
	for _, f := range files {
		out[f.at] = store.FileImport{Results: f.results, Err: f.err}
		if f.err == nil {
			f.plan.Done(ctx, st.log, st, f.results)
		}
	}
	return out
}

// batchFile is one file of ImportFilesWith: its plan, its events' facts
// and search documents (importFacts), and, once its transaction ran, its
// outcome.
type batchFile struct {
	at      int // its index in the batch's paths
	path    string
	plan    *store.ImportPlan
	facts   map[string][]*core.EventFacts
	docs    map[string]importedDocs
	results []store.ImportResult
	err     error
}

// importBatch writes files in one transaction, each in a savepoint: a
// file's plan, its sessions' derived values and its search documents
// (wtx.finish in a child transaction), released into the transaction
// when all of them succeed, rolled back to the savepoint (f.err) when one
// fails. The error is the transaction's or the store's (storeFault):
// nothing of the batch committed.
func (st *Store) importBatch(ctx context.Context, files []batchFile, o store.ImportOptions) error {
	if o.Turn != nil {
		if err := o.Turn(ctx); err != nil {
			return err
		}
	}
	var queued func()
	if o.Queued != nil {
		follow := false
		for _, f := range files {
			for _, p := range f.plan.Prepared() {
				follow = follow || p.Log.Header.ChildOf() != ""
			}
		}
		queued = func() { o.Queued(follow) }
	}
	return st.queue.SubmitThen(ctx, &request{kind: kindTx, relaxed: o.Relaxed, fn: func(t *wtx) error {
		// The savepoint comes before anything is written, so FTS4 has no
		// pending terms to flush for it.
		if _, err := t.tx.Exec("SAVEPOINT import_batch"); err != nil {
			return translate(err, "import: savepoint")
		}
		isolated := map[int]bool{}
		for {
			failed, err := attemptBatch(t, st.now, files, isolated)
			if err != nil {
				return err
			}
			if failed < 0 {
				break
			}
			// Again from the start, that file in a savepoint of its own.
			isolated[failed] = true
			if _, err := t.tx.Exec("ROLLBACK TO import_batch"); err != nil {
				return translate(err, "import: roll back to savepoint")
			}
		}
		if _, err := t.tx.Exec("RELEASE import_batch"); err != nil {
			return translate(err, "import: release savepoint")
		}
		t.finished = true
		return nil
	}}, queued)
}

// attemptBatch writes files in t, each in a child transaction, and
// merges them into t when all succeed. FTS4 flushes its pending terms
// into a new segment at every savepoint — a SAVEPOINT, and the statement
// savepoint of a multi-row INSERT or of an UPDATE of a row other tables
// refer to (events, sessions) — so the files not in isolated are written
// in two passes: first every file's sessions, events, notes and session
// rows (store.ImportPlan.Run, wtx.finishSessions), then every file's
// search documents (indexSessions, wtx.finishIndex, without a savepoint
// per session: wtx.bulk), in the files' order. If one of them fails, the
// attempt stops and returns its index (failed), and the caller rolls
// back and tries again with it isolated. An isolated file is written
// whole, at its place in the first pass, inside a savepoint: if it fails
// it is rolled back to it, its error kept (batchFile.err), and the others
// go on. failed is -1 when the attempt went through; err is a failure of
// the transaction itself, or of the store (storeFault: the disk full, the
// database read-only or locked, …), which would fail every file in turn
// — and may have rolled the whole transaction back (SQLite does on some
// SQLITE_FULL and I/O errors) — so it ends the batch at once, naming no
// file. (The writer's lag.inline, a mode of one test
// that files every transaction's appended events itself, is not for
// batches: two files appending to one session would file the first
// one's events twice.)
func attemptBatch(t *wtx, now func() time.Time, files []batchFile, isolated map[int]bool) (failed int, err error) {
	t.w.st.batchAttempts.Add(1)
	b := t.child()
	subs := make([]*wtx, len(files))
	for i := range files {
		f := &files[i]
		f.results, f.err = nil, nil
		iso := isolated[i]
		if iso {
			if _, err := t.tx.Exec("SAVEPOINT import_file"); err != nil {
				return 0, translate(err, "import: savepoint")
			}
		}
		sub := b.child()
		sub.bulk = !iso
		if f.docs != nil {
			sub.imported, sub.filedNow = f.docs, map[string]bool{}
		}
		var fault error
		r, err := f.plan.Run(importTx{t: sub, now: now, facts: f.facts, fault: &fault})
		if fault != nil {
			return 0, fault // the store's error, before Run named the file
		}
		if err != nil && storeFault(err) {
			return 0, err
		}
		if err == nil {
			if iso {
				err = sub.finish()
			} else {
				err = sub.finishSessions(false)
			}
			if err != nil && storeFault(err) {
				return 0, err
			}
			if err != nil {
				err = fmt.Errorf("import %s: %w", f.path, err)
			}
		}
		switch {
		case err != nil && !iso:
			return i, nil
		case err != nil:
			f.err = err
			if _, err := t.tx.Exec("ROLLBACK TO import_file; RELEASE import_file"); err != nil {
				return 0, translate(err, "import: roll back to savepoint")
			}
			continue
		case iso:
			if _, err := t.tx.Exec("RELEASE import_file"); err != nil {
				return 0, translate(err, "import: release savepoint")
			}
		}
		sub.mergeInto(b)
		f.results, subs[i] = r, sub
	}
	// A session two files of the batch appended to (one replaced what the
	// other wrote, or extended it) is filed by the last of them alone:
	// an earlier one's prepared documents may be of a log that is gone.
	last := map[string]int{}
	for i, sub := range subs {
		if sub != nil {
			for id, s := range sub.touched {
				if len(s.appended) > 0 {
					last[id] = i
				}
			}
		}
	}
	filed := map[string]bool{}
	for i, sub := range subs {
		if sub == nil {
			continue
		}
		sub.refiledLater = func(id string) bool { return last[id] > i }
		if !isolated[i] {
			err := sub.indexSessions()
			if err == nil {
				err = sub.finishIndex()
			}
			if err != nil && storeFault(err) {
				return 0, err
			}
			if err != nil {
				return i, nil // isolated, its error is kept
			}
		}
		for id := range sub.filedNow {
			filed[id] = true
		}
	}
	b.mergeInto(t)
	t.filedNow = filed
	return -1, nil
}

// indexSessions files the own search document of each session t created,
// replaced or retitled, which finishSessions(false) left to it.
func (t *wtx) indexSessions() error {
	for _, id := range t.order {
		s := t.touched[id]
		if s.dirty && !s.deleted && (s.created || s.replaced || s.retitled) {
			if err := t.indexSession(id, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// beginRelaxed starts a write transaction that commits at
// synchronous=NORMAL (SQLite refuses the change inside a transaction),
// with the write-ahead log's automatic checkpoints put off: an import's
// relaxed files would otherwise checkpoint every file or two (each of its
// commits writes near the default 1,000 pages), copying the pages the
// next ones write again, with two waits for the disk each. The writer's
// next begin puts both back (restoreSync), as after an index transaction:
// the durable commit that follows relaxed ones checkpoints them at once.
func (w *writer) beginRelaxed() (*connTx, error) {
	if !w.st.opts.SyncNormal && !w.relaxed {
		if _, err := w.conn.ExecContext(context.Background(), "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0"); err != nil {
			return nil, translate(err, "import: relax synchronous")
		}
		w.relaxed = true
	}
	return w.beginAsSet()
}

// Sync returns once every commit before it is on disk, relaxed ones
// (store.ImportOptions.Relaxed) included: it commits a transaction at
// synchronous=FULL, which syncs the write-ahead log — written in order, so
// every commit before it is durable with it. The transaction rewrites the
// file's user_version with its own value: it changes nothing, but writes
// a page, so its commit reaches the disk.
func (st *Store) Sync(ctx context.Context) error {
	return st.write(ctx, func(t *wtx) error {
		var v int64
		if err := t.tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
			return translate(err, "sync: read user_version")
		}
		if _, err := t.tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
			return translate(err, "sync: write user_version")
		}
		return nil
	})
}

// importFacts decodes the facts and the search words of the plan's
// events by session id, in the importing goroutine, so that the writer,
// which every write waits for, decodes none of them (insertEvents,
// indexEvent): an import's next file decodes while this one commits.
// With withDocs it prepares their search documents too (prepareDoc), for
// an import that files them in its own transaction (fileImported); docs
// is nil without. A session id the file holds twice gets neither.
func importFacts(plan *store.ImportPlan, withDocs bool) (map[string][]*core.EventFacts, map[string]importedDocs) {
	preps := plan.Prepared()
	facts := make(map[string][]*core.EventFacts, len(preps))
	var docs map[string]importedDocs
	if withDocs {
		docs = make(map[string]importedDocs, len(preps))
	}
	for _, p := range preps {
		id := p.Log.Header.ID
		if _, twice := facts[id]; twice {
			facts[id] = nil
			if docs != nil {
				docs[id] = importedDocs{}
			}
			continue
		}
		fs := make([]core.EventFacts, len(p.Events))
		ptrs := make([]*core.EventFacts, len(p.Events))
		var ds []eventDoc
		var dptrs []*eventDoc
		if docs != nil {
			ds, dptrs = make([]eventDoc, len(p.Events)), make([]*eventDoc, len(p.Events))
		}
		for i := range p.Events {
			e := &p.Events[i]
			fs[i] = search.FactsWithTexts(e)
			ptrs[i] = &fs[i]
			if docs != nil {
				ds[i] = prepareDoc(e, &fs[i])
				dptrs[i] = &ds[i]
			}
		}
		facts[id] = ptrs
		if docs != nil && len(p.Events) > 0 {
			docs[id] = importedDocs{first: p.Events[0].Seq, docs: dptrs}
		}
	}
	return facts, docs
}

// importedDocs are the prepared search documents of a session's events
// in a file: docs[i] is the document of the event of seq first+i.
type importedDocs struct {
	first int64
	docs  []*eventDoc
}

// of returns the documents of events, nil unless it holds each of them.
func (d importedDocs) of(events []core.Event) []*eventDoc {
	if len(events) == 0 {
		return nil
	}
	from := events[0].Seq - d.first
	if from < 0 || from+int64(len(events)) > int64(len(d.docs)) {
		return nil
	}
	return d.docs[from : from+int64(len(events))]
}

// fileImported files, in an import's own transaction, the search
// documents of the events it appended (ImportOptions.FileIndex), from
// their prepared documents, and moves each session's watermark — what an
// index transaction after the commit would do (catchUp; a session it
// cannot file stays behind its log and goes to the lag, as an append's
// events do). The writer files the lag before an import's transaction,
// so the appended events are the ones the index misses.
func (t *wtx) fileImported() error {
	if t.w.noIndex {
		return nil
	}
	for _, id := range t.order {
		s := t.touched[id]
		if !s.exists || s.deleted || len(s.appended) == 0 || (t.refiledLater != nil && t.refiledLater(id)) {
			continue
		}
		g := &lagLog{events: s.appended, facts: s.appendedFacts, docs: t.imported[id].of(s.appended)}
		if t.bulk {
			if _, err := t.catchUp(id, g); err != nil {
				return err
			}
			t.filedNow[id] = true
			continue
		}
		failed, err := t.catchUpIsolated(id, g)
		if err != nil {
			return err
		}
		if failed == nil {
			t.filedNow[id] = true
		}
	}
	return nil
}

// importTx is a write transaction as store.ImportPlan.Run drives it.
type importTx struct {
	t     *wtx
	now   func() time.Time
	facts map[string][]*core.EventFacts // importFacts
	// fault, if not nil, gets the first of its errors that is the
	// store's (storeFault), as the store reported it: Run names the file
	// in the error it returns, and a batch blames no file for it.
	fault *error
}

// noted returns err, kept in i.fault first when it is the store's.
func (i importTx) noted(err error) error {
	if err != nil && i.fault != nil && *i.fault == nil && storeFault(err) {
		*i.fault = err
	}
	return err
}

func (i importTx) Exists(id string) (bool, error) {
	s, err := i.t.state(id)
	return err == nil && s.exists, i.noted(err)
}

func (i importTx) Before(id string) int {
	if s, err := i.t.state(id); err == nil && s.exists {
		return int(s.sum.Events)
	}
	return 0
}

func (i importTx) SyncLog(h core.SessionHeader, events []core.Event, source string, replace bool) (string, int, error) {
	facts := i.facts[h.ID]
	if len(facts) != len(events) {
		facts = nil
	}
	outcome, added, err := i.t.syncLogFacts(h, events, facts, source, replace)
	return outcome, added, i.noted(err)
}

func (i importTx) PutSource(id string, info core.SourceInfo) error {
	return i.noted(i.t.putSource(id, info))
}

func (i importTx) RevokeShares(id string) (int, error) {
	n, err := i.t.revokeShares(id, i.now().UnixMilli())
	return n, i.noted(err)
}

func (i importTx) PutNotes(id string, ns []store.SideNote) error {
	return i.noted(i.t.importNotes(id, ns))
}

// SyncLog makes the stored session equal h plus events in a transaction of
// its own (see syncLog): it creates it, leaves it, appends the missing
// tail, or with replace set replaces a watched session's log.
func (st *Store) SyncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error) {
	err = st.write(ctx, func(t *wtx) error {
		outcome, added, err = t.syncLog(h, events, source, replace)
		return err
	})
	return outcome, added, err
}

// SyncWatched makes a watched session's log h plus events (SyncLog with
// source watch and replace set), unless the session was deleted through
// this store during its run: then it writes nothing and reports
// store.ImportSkipped (sources/watch.Store).
func (st *Store) SyncWatched(ctx context.Context, h core.SessionHeader, events []core.Event) (outcome string, added int, err error) {
	err = st.write(ctx, func(t *wtx) error {
		// Checked in the transaction: a delete commits before it or
		// after it, never between the check and the write.
		s, err := t.state(h.ID)
		if err != nil {
			return err
		}
		if s.deleted || !s.exists && st.WasDeleted(h.ID) {
			outcome = store.ImportSkipped
			return nil
		}
		outcome, added, err = t.syncLog(h, events, store.SourceWatch, true)
		return err
	})
	return outcome, added, err
}

// ImportLimits are the decoder limits the store was opened with
// (Options.Limits).
func (st *Store) ImportLimits() dsh.Limits { return st.opts.Limits }

// syncLog makes the stored session equal h plus events: it creates it,
// leaves it, or appends the missing tail. A stored log that is not a prefix
// of events is a conflict, unless replace is set: then its log is replaced
// (the watcher sets it for sessions tailed from a file, source watch;
// import --replace for any session but a running live one).
func (t *wtx) syncLog(h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error) {
	return t.syncLogFacts(h, events, nil, source, replace)
}

// syncLogFacts is syncLog with the events' facts when the caller has them
// (nil: they are decoded).
func (t *wtx) syncLogFacts(h core.SessionHeader, events []core.Event, facts []*core.EventFacts, source string, replace bool) (outcome string, added int, err error) {
	if err := store.ValidateHeader(h); err != nil {
		return "", 0, err
	}
	s, err := t.state(h.ID)
	if err != nil {
		return "", 0, err
	}
	if !s.exists {
		if err := t.insertSession(s, h, source); err != nil {
			return "", 0, err
		}
		evs, err := store.PrepareEvents(h.ID, 0, events, false)
		if err != nil {
			return "", 0, err
		}
		return store.ImportCreated, len(evs), t.insertEvents(h.ID, s, evs, facts)
	}
	stored, err := t.loadEvents(h.ID)
	if err != nil {
		return "", 0, err
	}
	plan, err := store.Reconcile(store.Stored{Header: s.header, Source: s.source, Events: stored, Running: s.sum.Status == core.StatusRunning},
		h, events, source, replace)
	if err != nil {
		return "", 0, err
	}
	switch plan.Outcome {
	case store.ImportUnchanged:
		return plan.Outcome, 0, nil
	case store.ImportReplaced:
		if err := t.replaceSession(s, h.ID, h, source); err != nil {
			return "", 0, err
		}
	}
	evs, err := store.PrepareEvents(h.ID, int64(plan.From), events[plan.From:], false)
	if err != nil {
		return "", 0, err
	}
	if facts != nil {
		facts = facts[plan.From:]
	}
	return plan.Outcome, len(evs), t.insertEvents(h.ID, s, evs, facts)
}

// importNotes stores the notes an export zip holds beside session id's
// log (store.SideNotes) in the import's transaction; a note already
// stored (by id) is left as it is. Open pages are told at commit.
func (t *wtx) importNotes(id string, ns []store.SideNote) error {
	s, err := t.state(id)
	if err != nil {
		return err
	}
	for _, n := range ns {
		var call, removedAt any
		if n.CallID != "" {
			call = n.CallID
		}
		if n.RemovedAt != 0 {
			removedAt = n.RemovedAt
		}
		if _, err := t.tx.Exec(`INSERT INTO notes (id, session_id, kind, call_id, at_seq, time, author, data, label, commented, removed_at, removed_at_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			n.ID, n.Session, n.Kind, call, n.AtSeq, n.Time, n.Author, string(n.Data), n.Facts.Label, b2i(n.Facts.Commented), removedAt, n.RemovedAtSeq); err != nil {
			return translate(err, "import note "+n.ID+" of session "+id)
		}
	}
	s.notes = true
	return nil
}
