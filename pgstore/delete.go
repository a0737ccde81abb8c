package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/logkey"
	"prism/store"
)

// DeleteSession deletes a session for good: its row, its events, its
// search documents, its share links (their URLs answer the share 404 from
// then on) and, the same way, every subagent session below it. It is one
// transaction: all of that goes or nothing does. An unknown id is
// core.CodeNotFound. Pages open on a deleted session, on every node, are
// told through Options.Committed (a Commit with Deleted set).
//
// Deleting does not ask whether the session is running: the caller decides
// (the web server refuses a session its runner is running).
func (st *Store) DeleteSession(ctx context.Context, id string) (store.Deleted, error) {
	var out store.Deleted
	err := st.write(ctx, func(t *wtx) error {
		var err error
		out, err = t.deleteTree(ctx, id)
		return err
	})
	if err != nil {
		return store.Deleted{}, err
	}
	st.deleted.mark(true, append([]string{out.SessionID}, out.Subagents...)...)
	st.log.Info("deleted session", logkey.SessionID, id, logkey.Events, out.Events, logkey.Subagents, len(out.Subagents), logkey.Shares, out.Shares)
	return out, nil
}

// DeleteEndedBefore deletes every top-level session that is not running
// (status idle, ended or interrupted, no approval waiting) and whose last
// event is older than before, each with its subagents (the retention of
// prism serve --retain). It returns what it deleted, oldest first.
func (st *Store) DeleteEndedBefore(ctx context.Context, before time.Time) ([]store.Deleted, error) {
	rows, err := st.pool.Query(ctx, `SELECT id FROM sessions WHERE parent_id IS NULL AND status <> 'running' AND awaiting = 0
		AND updated_at < $1 ORDER BY updated_at, id`, before.UnixMilli())
	if err != nil {
		return nil, translate(err, "list sessions past retention")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate(err, "list sessions past retention")
	}
	return store.DeleteEach(ctx, ids, st.DeleteSession)
}

// deleteTree deletes a session and its descendants in t, their rows
// locked first (a concurrent append waits, then finds the session gone).
func (t *wtx) deleteTree(ctx context.Context, id string) (store.Deleted, error) {
	d := store.Deleted{SessionID: id, Subagents: []string{}}
	rows, err := t.tx.Query(ctx, `WITH RECURSIVE tree(id) AS (SELECT $1::text UNION SELECT s.id FROM sessions s JOIN tree ON s.parent_id = tree.id)
		SELECT id FROM tree`, id)
	if err != nil {
		return d, translate(err, "delete session "+id)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return d, translate(err, "delete session "+id)
	}
	if err := t.lock(ctx, ids); err != nil {
		return d, err
	}
	if !t.touched[id].exists {
		return d, store.NotFound(id)
	}
	var gone []string
	for _, x := range ids {
		if !t.touched[x].exists {
			continue // deleted meanwhile
		}
		gone = append(gone, x)
		if x != id {
			d.Subagents = append(d.Subagents, x)
		}
	}
	if err := t.tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE session_id = ANY($1)), (SELECT count(*) FROM shares WHERE session_id = ANY($1))`,
		gone).Scan(&d.Events, &d.Shares); err != nil {
		return d, translate(err, "delete session "+id)
	}
	// Rows that refer to a session are deleted explicitly, children
	// first, rather than trusting ON DELETE CASCADE alone (a table that
	// joins later must be listed here too).
	for _, table := range []string{"search_docs", "search_sessions", "shares", "notes", "session_sources", "session_commands", "events"} {
		if _, err := t.tx.Exec(ctx, "DELETE FROM "+table+" WHERE session_id = ANY($1)", gone); err != nil {
			return d, translate(err, "delete session "+id+": "+table)
		}
	}
	if _, err := t.tx.Exec(ctx, "DELETE FROM sessions WHERE id = ANY($1)", gone); err != nil {
		return d, translate(err, "delete session "+id)
	}
	for _, x := range gone {
		t.touched[x] = &sessState{sum: core.NewSummary(), lockedSeq: -1, deleted: true}
	}
	return d, nil
}

// revokeShares revokes every live share link of a session whose log was
// replaced: a link promised the session as it was.
func (t *wtx) revokeShares(ctx context.Context, id string, now int64) (int, error) {
	tag, err := t.tx.Exec(ctx, "UPDATE shares SET revoked_at = $1 WHERE session_id = $2 AND revoked_at IS NULL", now, id)
	if err != nil {
		return 0, translate(err, "revoke the share links of session "+id)
	}
	return int(tag.RowsAffected()), nil
}
