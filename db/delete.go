package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"prism/core/logkey"
	"prism/store"
)

// Deleted reports what deleting one session removed (store.Deleted).
type Deleted = store.Deleted

// DeleteSession deletes a session for good: its row, its events, its share
// links (their URLs answer the share 404 from then on) and, the same way,
// every subagent session below it. It is one transaction: all of that goes
// or nothing does. An unknown id is core.CodeNotFound. Pages open on a
// deleted session are told through Options.Committed (a Commit with
// Deleted set).
//
// Deleting does not ask whether the session is running: the caller decides
// (the web server refuses a session its runner is running).
func (st *Store) DeleteSession(ctx context.Context, id string) (Deleted, error) {
	var out Deleted
	err := st.write(ctx, func(t *wtx) error {
		s, err := t.state(id)
		if err != nil {
			return err
		}
		if !s.exists {
			return store.NotFound(id)
		}
		out, err = t.deleteTree(id)
		return err
	})
	if err != nil {
		return Deleted{}, err
	}
	st.log.Info("deleted session", logkey.SessionID, id, logkey.Events, out.Events, logkey.Subagents, len(out.Subagents), logkey.Shares, out.Shares)
	return out, nil
}

// DeleteEndedBefore deletes every top-level session that is not running
// (status idle, ended or interrupted, no approval waiting) and whose last
// event is older than before, each with its subagents (the retention of prism serve
// --retain). It returns what it deleted, oldest first.
func (st *Store) DeleteEndedBefore(ctx context.Context, before time.Time) ([]Deleted, error) {
	rows, err := st.rdb.QueryContext(ctx, `SELECT id FROM sessions WHERE parent_id IS NULL AND status <> 'running' AND awaiting = 0
		AND updated_at < ? ORDER BY updated_at, id`, before.UnixMilli())
	if err != nil {
		return nil, translate(err, "list sessions past retention")
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, translate(err, "list sessions past retention")
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list sessions past retention")
	}
	return store.DeleteEach(ctx, ids, st.DeleteSession)
}

// markDeleted records that session id was deleted (or, gone false,
// created again) through this store.
func (st *Store) markDeleted(id string, gone bool) {
	st.deletedMu.Lock()
	defer st.deletedMu.Unlock()
	if !gone {
		delete(st.deleted, id)
		return
	}
	if st.deleted == nil {
		st.deleted = map[string]bool{}
	}
	st.deleted[id] = true
}

// WasDeleted reports whether session id was deleted through this store
// and not created again since (a watcher skips its file meanwhile).
func (st *Store) WasDeleted(id string) bool {
	st.deletedMu.Lock()
	defer st.deletedMu.Unlock()
	return st.deleted[id]
}

// deleteTree deletes a session and its descendants in t.
func (t *wtx) deleteTree(id string) (Deleted, error) {
	d := Deleted{SessionID: id, Subagents: []string{}}
	rows, err := t.tx.Query(`WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree ON s.parent_id = tree.id)
		SELECT id FROM tree`, id)
	if err != nil {
		return d, translate(err, "delete session "+id)
	}
	var ids []string
	for rows.Next() {
		var x string
		if err := rows.Scan(&x); err != nil {
			rows.Close()
			return d, translate(err, "delete session "+id)
		}
		ids = append(ids, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, translate(err, "delete session "+id)
	}
	in := "(?" + strings.Repeat(",?", len(ids)-1) + ")"
	args := make([]any, len(ids))
	for i, x := range ids {
		args[i] = x
		if x != id {
			d.Subagents = append(d.Subagents, x)
		}
	}
	count := func(table string) (int64, error) {
		var n int64
		err := t.tx.QueryRow("SELECT count(*) FROM "+table+" WHERE session_id IN "+in, args...).Scan(&n)
		return n, err
	}
	if d.Events, err = count("events"); err != nil {
		return d, translate(err, "delete session "+id)
	}
	if d.Shares, err = count("shares"); err != nil {
		return d, translate(err, "delete session "+id)
	}
	// Rows that refer to a session are deleted explicitly, children first,
	// rather than trusting ON DELETE CASCADE alone (an index of another
	// table that joins later must be listed here too). The search index
	// goes first: search_fts (an FTS4 table, no foreign key) is keyed by
	// search_docs' ids.
	if _, err := t.tx.Exec("DELETE FROM search_fts WHERE docid IN (SELECT id FROM search_docs WHERE session_id IN "+in+")", args...); err != nil {
		return d, translate(err, fmt.Sprintf("delete session %s: search_fts", id))
	}
	for _, table := range []string{"search_docs", "search_sessions", "shares", "notes", "session_sources", "events"} {
		if _, err := t.tx.Exec("DELETE FROM "+table+" WHERE session_id IN "+in, args...); err != nil {
			return d, translate(err, fmt.Sprintf("delete session %s: %s", id, table))
		}
	}
	if _, err := t.tx.Exec("DELETE FROM sessions WHERE id IN "+in, args...); err != nil {
		return d, translate(err, "delete session "+id)
	}
	for _, x := range ids {
		s, err := t.state(x)
		if err != nil {
			return d, err
		}
		*s = sessState{deleted: true}
	}
	return d, nil
}

// revokeShares revokes every live share link of a session whose log was
// replaced: a link promised the session as it was.
func (t *wtx) revokeShares(id string, now int64) (int, error) {
	res, err := t.tx.Exec("UPDATE shares SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL", now, id)
	if err != nil {
		return 0, translate(err, "revoke the share links of session "+id)
	}
	n, err := res.RowsAffected()
	return int(n), translate(err, "revoke the share links of session "+id)
}
