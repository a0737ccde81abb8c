package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"prism/core"
	"prism/core/logkey"
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
	if err := o.Check(); err != nil {
		return nil, err
	}
	release, err := st.imports.Acquire(ctx, false)
	if err != nil {
		return nil, err
	}
	defer release()
	defer memrelease.Release() // the decode's peak goes back to the OS, as the process's policy allows
	logs, _, err := dsh.ReadFileWith(path, st.opts.Limits, st.opts.Foreign)
	if err != nil {
		return nil, err
	}
	return st.importLogs(ctx, path, logs, o)
}

// Import is ImportFile for a file held by a reader (an upload); name is
// used in errors.
func (st *Store) Import(ctx context.Context, name string, r io.Reader, size int64) ([]store.ImportResult, error) {
	return st.ImportWith(ctx, name, r, size, store.ImportOptions{})
}

// ImportWith is Import with options, as ImportFileWith.
func (st *Store) ImportWith(ctx context.Context, name string, r io.Reader, size int64, o store.ImportOptions) ([]store.ImportResult, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	release, err := st.imports.Acquire(ctx, false)
	if err != nil {
		return nil, err
	}
	defer release()
	defer memrelease.Release() // the decode's peak goes back to the OS, as the process's policy allows
	logs, _, err := dsh.DecodeNamed(name, r, size, st.opts.Limits, st.opts.Foreign)
	if err != nil {
		var fe *dsh.FormatError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = name
		}
		return nil, err
	}
	return st.importLogs(ctx, name, logs, o)
}

func (st *Store) importLogs(ctx context.Context, file string, logs []*dsh.Log, o store.ImportOptions) ([]store.ImportResult, error) {
	logs, original, err := o.Rename(file, logs)
	if err != nil {
		return nil, err
	}
	var preps []store.Prepared
	for _, l := range logs {
		p, err := store.PrepareLog(file, l)
		if err != nil {
			return nil, err
		}
		preps = append(preps, p)
	}
	if err := store.CheckFamilyCycles(file, logs); err != nil {
		return nil, err
	}
	inFile := map[string]bool{}
	for _, p := range preps {
		inFile[p.Log.Header.ID] = true
	}
	var results []store.ImportResult
	err = st.write(ctx, func(t *wtx) error {
		results = results[:0]
		ids := make([]string, len(preps))
		for i, p := range preps {
			ids[i] = p.Log.Header.ID
		}
		if err := t.lock(ctx, ids); err != nil {
			return err
		}
		for _, p := range preps {
			err := store.CheckParent(file, p.Log, inFile, func(id string) (bool, error) {
				var ok bool
				err := t.tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)", id).Scan(&ok)
				return ok, translate(err, "look up session "+id)
			})
			if err != nil {
				return err
			}
		}
		for _, p := range preps {
			h := p.Log.Header
			revoked, before := 0, 0
			if prev := t.touched[h.ID]; prev != nil && prev.exists {
				before = int(prev.sum.Events)
			}
			outcome, added, err := t.syncLog(ctx, h, p.Events, store.SourceImport, o.Replace)
			if err == nil && p.Log.Source != nil {
				err = t.putSource(ctx, h.ID, *p.Log.Source)
			}
			if err == nil && outcome == store.ImportReplaced {
				revoked, err = t.revokeShares(ctx, h.ID, st.now().UnixMilli())
			}
			if err == nil {
				err = t.importNotes(h.ID, p.Log, original != "")
			}
			if err != nil {
				where := file
				if p.Log.Entry != "" {
					where += ": " + p.Log.Entry
				}
				return fmt.Errorf("import %s: %w", where, err)
			}
			results = append(results, store.ImportResult{SessionID: h.ID, ParentID: h.ChildOf(), Entry: p.Log.Entry, Outcome: outcome,
				Events: len(p.Events), Added: added, Repaired: p.Repaired, Torn: p.Log.Torn, Kept: p.Log.Notes, Revoked: revoked, Original: original, Before: before})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		st.deleted.mark(false, r.SessionID) // created again: a watcher follows its file anew
	}
	store.LogImported(ctx, st.log, file, results)
	// The import is committed: a link that cannot be written is logged,
	// the sessions stay.
	if _, err := store.WriteInferredLinks(ctx, st, preps); err != nil {
		st.log.Warn("inferred subagent links", logkey.File, file, logkey.Err, err)
	}
	return results, nil
}

// SyncLog makes the stored session equal h plus events in a transaction of
// its own (store.Reconcile decides): it creates it, leaves it, appends the
// missing tail, or with replace set replaces a watched session's log.
func (st *Store) SyncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error) {
	err = st.write(ctx, func(t *wtx) error {
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

// importNotes stores the notes an export zip holds beside log l
// (store.SideNotes) once the session's rows are flushed, in the import's
// transaction; a note already stored (by id) is left as it is.
func (t *wtx) importNotes(id string, l *dsh.Log, renamed bool) error {
	ns, err := store.SideNotes(id, l, renamed)
	if err != nil || len(ns) == 0 {
		return err
	}
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
