package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/logkey"
	"prism/core/memrelease"
	"prism/core/sessionlog"
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
	logs, _, err := sessionlog.ReadFile(path, st.opts.Limits)
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
	logs, _, err := sessionlog.DecodeNamed(name, r, size, st.opts.Limits)
	if err != nil {
		var fe *sessionlog.FormatError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = name
		}
		return nil, err
	}
	return st.importLogs(ctx, name, logs, o)
}

func (st *Store) importLogs(ctx context.Context, file string, logs []*sessionlog.Log, o store.ImportOptions) ([]store.ImportResult, error) {
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
	inFile := map[string]bool{}
	for _, p := range preps {
		inFile[p.Log.Header.ID] = true
	}
	var results []store.ImportResult
	err = st.inTx(ctx, func(t *wtx) error {
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
			if err == nil && outcome == store.ImportReplaced {
				revoked, err = t.revokeShares(ctx, h.ID, st.now().UnixMilli())
			}
			if err != nil {
				where := file
				if p.Log.Entry != "" {
					where += ": " + p.Log.Entry
				}
				return fmt.Errorf("import %s: %w", where, err)
			}
			results = append(results, store.ImportResult{SessionID: h.ID, ParentID: h.ParentSession, Entry: p.Log.Entry, Outcome: outcome,
				Events: len(p.Events), Added: added, Repaired: p.Repaired, Torn: p.Log.Torn, Revoked: revoked, Original: original, Before: before})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	store.LogImported(ctx, st.log, file, results)
	return results, nil
}

// SyncLog makes the stored session equal h plus events in a transaction of
// its own (store.Reconcile decides): it creates it, leaves it, appends the
// missing tail, or with replace set replaces a watched session's log.
func (st *Store) SyncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error) {
	err = st.inTx(ctx, func(t *wtx) error {
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
		if err := t.create(h, source); err != nil {
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
		if err := t.replace(ctx, h.ID, h, source); err != nil {
			return "", 0, err
		}
	}
	return plan.Outcome, len(events) - plan.From, t.append(h.ID, events[plan.From:])
}

// RepairOpenTurns applies crash repair to the sessions prism itself
// writes (source "live") whose advisory lock is free — no node runs them.
// First it removes those that never logged an event (created, then killed
// before their first event was committed: never acknowledged, nothing to
// show). Then it appends core.InterruptedTurnClosers to those whose status
// is running, which marks them interrupted. A session another node runs is
// left alone; two nodes repairing at once repair each session once (each
// repair holds the session's lock for its transaction and re-checks the
// session under the row lock). It returns the ids it removed or repaired.
func (st *Store) RepairOpenTurns(ctx context.Context) ([]string, error) {
	removed, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND last_seq = -1 ORDER BY id",
		"removed a session whose first turn was never logged", removeUnstarted)
	if err != nil {
		return removed, err
	}
	repaired, err := st.repairEach(ctx, "SELECT id FROM sessions WHERE source = 'live' AND status = 'running' ORDER BY id",
		"repaired an interrupted turn", closeTurn(nil))
	return append(removed, repaired...), err
}

// A repairFix changes one session in a repair transaction that holds its
// locks, and reports whether it did.
type repairFix func(ctx context.Context, t *wtx, id string, s *sessState) (bool, error)

// removeUnstarted removes a session that never logged an event (created,
// then its node died before its first event was committed: never
// acknowledged, nothing to show).
func removeUnstarted(ctx context.Context, t *wtx, id string, s *sessState) (bool, error) {
	if s.sum.Events != 0 {
		return false, nil
	}
	return true, t.remove(ctx, id)
}

// closeTurn returns the fix that appends core.InterruptedTurnClosersWhy
// (with why on its turn/end) to a session whose status is running.
func closeTurn(why *core.CancelCause) repairFix {
	return func(ctx context.Context, t *wtx, id string, s *sessState) (bool, error) {
		if s.sum.Status != core.StatusRunning {
			return false, nil
		}
		events, err := t.loadEvents(ctx, id)
		if err != nil {
			return false, err
		}
		closers := core.InterruptedTurnClosersWhy(events, why)
		for i := range closers {
			closers[i].Seq = int64(len(events) + i)
		}
		if len(closers) == 0 {
			return false, nil
		}
		return true, t.append(id, closers)
	}
}

// repairEach runs fix on each session query selects (repairOne) and
// returns the ids fix changed.
func (st *Store) repairEach(ctx context.Context, query, what string, fix repairFix) ([]string, error) {
	rows, err := st.pool.Query(ctx, query)
	if err != nil {
		return nil, translate(err, "list sessions to repair")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate(err, "list sessions to repair")
	}
	var changed []string
	for _, id := range ids {
		done, err := st.repairOne(ctx, id, what, fix)
		if err != nil {
			return changed, err
		}
		if done {
			changed = append(changed, id)
		}
	}
	return changed, nil
}

// repairOne runs fix on session id in a transaction of its own that holds
// the session's advisory lock (skipping a session a node runs) and its row
// lock (skipping one that is gone), logging what when fix changed it. The
// transaction commits through the ordinary path: other nodes are notified
// and this node's fan-out delivers the change.
func (st *Store) repairOne(ctx context.Context, id, what string, fix repairFix) (bool, error) {
	done := false
	err := st.inTx(ctx, func(t *wtx) error {
		var free bool
		if err := t.tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", sessionLockKey(id)).Scan(&free); err != nil {
			return translate(err, "lock session "+id)
		}
		if !free {
			return nil // a node runs it
		}
		if err := t.lock(ctx, []string{id}); err != nil {
			return err
		}
		s := t.touched[id]
		if !s.exists {
			return nil
		}
		var err error
		done, err = fix(ctx, t, id, s)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("repair session %s: %w", id, err)
	}
	if done {
		st.log.Info(what, logkey.SessionID, id)
	}
	return done, nil
}

// sessionLockKey is the advisory lock key of a session: 64 bits of
// FNV-1a over a prefix and its id (a collision only makes a free session
// look held).
func sessionLockKey(id string) int64 {
	h := fnv.New64a()
	h.Write([]byte("prism session\x00" + id))
	return int64(h.Sum64())
}
