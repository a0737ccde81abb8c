package pgstore

import (
	"context"
	"io"
	"time"

	"prism/core"
	"prism/core/memrelease"
	"prism/sources/dsh"
	"prism/store"
)

// ImportFile imports a session log file: prism JSONL (one session or
// many), dsh session.jsonl, session.jsonl.zstd or a dsh export .zip — with
// the SQLite store's rules (store.PrepareLog, store.Reconcile): the whole
// file commits in one transaction or not at all, however many sessions it
// holds, an open last turn gets crash repair, and a
// session already stored is left, extended or refused as a conflict.
func (st *Store) ImportFile(ctx context.Context, path string) ([]store.ImportResult, error) {
	return st.ImportFileWith(ctx, path, store.ImportOptions{})
}

// ImportFileWith is ImportFile with options (--as, --replace; see
// store.ImportOptions). Options that cannot apply fail before anything is
// written, and so does any error: the store is left as it was.
func (st *Store) ImportFileWith(ctx context.Context, path string, o store.ImportOptions) ([]store.ImportResult, error) {
	return st.importReader().ReadFile(ctx, path, o, func(logs []*dsh.Log) ([]store.ImportResult, error) {
		return st.importLogs(ctx, path, logs, o)
	})
}

// Import is ImportFile for a file held by a reader (an upload); name is
// used in errors.
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
// import slots, the decode's peak going back to the OS as the process's
// policy allows.
func (st *Store) importReader() store.ImportReader {
	return store.ImportReader{Slots: st.imports, Limits: st.opts.Limits, Foreign: st.opts.Foreign, Release: memrelease.Release}
}

// importLogs imports a file's decoded logs in one transaction
// (store.ImportPlan), its sessions locked first.
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
	var results []store.ImportResult
	err = st.writeCreating(ctx, func(t *wtx) error {
		if err := t.lock(ctx, plan.IDs()); err != nil {
			return err
		}
		r, err := plan.Run(importTx{ctx: ctx, t: t, now: st.now})
		results = r
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		st.deleted.mark(false, r.SessionID) // created again: a watcher follows its file anew
	}
	plan.Done(ctx, st.log, st, results)
	return results, nil
}

// importTx is a write transaction that locked the import's sessions, as
// store.ImportPlan.Run drives it.
type importTx struct {
	ctx context.Context
	t   *wtx
	now func() time.Time
}

func (i importTx) Exists(id string) (bool, error) {
	var ok bool
	err := i.t.tx.QueryRow(i.ctx, "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)", id).Scan(&ok)
	return ok, translate(err, "look up session "+id)
}

func (i importTx) Before(id string) int {
	if s := i.t.touched[id]; s != nil && s.exists {
		return int(s.sum.Events)
	}
	return 0
}

func (i importTx) SyncLog(h core.SessionHeader, events []core.Event, source string, replace bool) (string, int, error) {
	return i.t.syncLog(i.ctx, h, events, source, replace)
}

func (i importTx) PutSource(id string, info core.SourceInfo) error {
	return i.t.putSource(i.ctx, id, info)
}

func (i importTx) RevokeShares(id string) (int, error) {
	return i.t.revokeShares(i.ctx, id, i.now().UnixMilli())
}

func (i importTx) PutNotes(id string, ns []store.SideNote) error { return i.t.importNotes(id, ns) }

// SyncLog makes the stored session equal h plus events in a transaction of
// its own (store.Reconcile decides): it creates it, leaves it, appends the
// missing tail, or with replace set replaces a watched session's log.
func (st *Store) SyncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error) {
	err = st.writeCreating(ctx, func(t *wtx) error {
		if err := t.lock(ctx, []string{h.ID}); err != nil {
			return err
		}
		outcome, added, err = t.syncLog(ctx, h, events, source, replace)
		return err
	})
	return outcome, added, err
}

// syncLog is SyncLog inside a transaction that has locked h.ID.
func (t *wtx) syncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (string, int, error) {
	if err := store.ValidateHeader(h); err != nil {
		return "", 0, err
	}
	s := t.touched[h.ID]
	if !s.exists {
		if err := t.insertSession(h, source); err != nil {
			return "", 0, err
		}
		return store.ImportCreated, len(events), t.append(h.ID, events)
	}
	stored, err := t.loadEvents(ctx, h.ID)
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
		if err := t.replaceSession(ctx, h.ID, h, source); err != nil {
			return "", 0, err
		}
	}
	return plan.Outcome, len(events) - plan.From, t.append(h.ID, events[plan.From:])
}

// importNotes stores the notes an export zip holds beside session id's
// log (store.SideNotes) once the session's rows are flushed, in the
// import's transaction; a note already stored (by id) is left as it is.
func (t *wtx) importNotes(id string, ns []store.SideNote) error {
	t.late = append(t.late, func(ctx context.Context) error {
		for _, n := range ns {
			if _, err := t.tx.Exec(ctx, `INSERT INTO notes (id, session_id, kind, call_id, at_seq, time, author, data, label, commented, removed_at, removed_at_seq)
				VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6, $7, $8, $9, $10, NULLIF($11::bigint, 0), $12) ON CONFLICT (id) DO NOTHING`,
				n.ID, n.Session, n.Kind, n.CallID, n.AtSeq, n.Time, n.Author, string(n.Data), n.Facts.Label, n.Facts.Commented, n.RemovedAt, n.RemovedAtSeq); err != nil {
				return translate(err, "import note "+n.ID+" of session "+id)
			}
		}
		return notifyNotes(ctx, t.tx, id)
	})
	return nil
}
