package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"prism/core"
	"prism/core/share"
	"prism/store"
)

const shareCols = `id, session_id, label, created_at, expires_at, up_to_seq, redact, revoked_at, views, last_viewed_at, labels, children`

func scanShare(row interface{ Scan(...any) error }) (share.Share, error) {
	var s share.Share
	var expires, upTo, revoked, viewed sql.NullInt64
	var redact, labels, children int
	if err := row.Scan(&s.ID, &s.SessionID, &s.Label, &s.CreatedAt, &expires, &upTo, &redact, &revoked, &s.Views, &viewed, &labels, &children); err != nil {
		return s, err
	}
	s.ExpiresAt, s.RevokedAt, s.LastViewedAt = expires.Int64, revoked.Int64, viewed.Int64
	if upTo.Valid {
		n := upTo.Int64
		s.UpToSeq = &n
	}
	s.Redact, s.Labels, s.Children = redact == 1, labels == 1, children == 1
	return s, nil
}

// CreateShare makes a link to a session and returns it with its token,
// which is not stored (only its SHA-256 hash is) and so cannot be shown
// again. The session must exist (core.CodeNotFound), an UpToSeq must name
// one of its events and an ExpiresAt lie in the future by the store's
// clock, and a label be at most share.MaxLabel characters without control
// characters (core.CodeInvalid).
func (st *Store) CreateShare(ctx context.Context, spec share.Spec) (share.Share, string, error) {
	now := st.now().UnixMilli()
	label, err := spec.Check(now)
	if err != nil {
		return share.Share{}, "", err
	}
	tok, hash := share.NewToken()
	s := share.Share{ID: core.NewID(), SessionID: spec.SessionID, Label: label, CreatedAt: now,
		ExpiresAt: spec.ExpiresAt, UpToSeq: spec.UpToSeq, Redact: spec.Redact, Labels: spec.Labels, Children: spec.Children}
	err = st.write(ctx, func(t *wtx) error {
		var lastSeq int64
		err := t.tx.QueryRow("SELECT last_seq FROM sessions WHERE id = ?", spec.SessionID).Scan(&lastSeq)
		if errors.Is(err, sql.ErrNoRows) {
			return store.NotFound(spec.SessionID)
		}
		if err != nil {
			return translate(err, "create share for session "+spec.SessionID)
		}
		if err := spec.CheckSeq(lastSeq); err != nil {
			return err
		}
		_, err = t.tx.Exec(`INSERT INTO shares (id, session_id, token_hash, label, created_at, expires_at, up_to_seq, redact, labels, children)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.SessionID, hash[:], s.Label, s.CreatedAt, nullInt(s.ExpiresAt), s.UpToSeq, b2i(s.Redact), b2i(s.Labels), b2i(s.Children))
		return translate(err, "create share for session "+spec.SessionID)
	})
	if err != nil {
		return share.Share{}, "", err
	}
	return s, tok, nil
}

// Shares lists a session's links, oldest first (revoked ones included).
func (st *Store) Shares(ctx context.Context, sessionID string) ([]share.Share, error) {
	rows, err := st.rdb.QueryContext(ctx, "SELECT "+shareCols+" FROM shares WHERE session_id = ? ORDER BY created_at, rowid", sessionID)
	if err != nil {
		return nil, translate(err, "list shares of session "+sessionID)
	}
	defer rows.Close()
	var out []share.Share
	for rows.Next() {
		s, err := scanShare(rows)
		if err != nil {
			return nil, translate(err, "list shares of session "+sessionID)
		}
		out = append(out, s)
	}
	return out, translate(rows.Err(), "list shares of session "+sessionID)
}

// Share returns one link by id (core.CodeNotFound if unknown).
func (st *Store) Share(ctx context.Context, id string) (share.Share, error) {
	s, err := scanShare(st.rdb.QueryRowContext(ctx, "SELECT "+shareCols+" FROM shares WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, core.Errorf(core.CodeNotFound, "share %s not found", id)
	}
	return s, translate(err, "read share "+id)
}

// ShareByToken returns the link whose token has this hash, revoked or
// expired ones included (the caller decides with share.Share.Active);
// core.CodeNotFound when none has.
func (st *Store) ShareByToken(ctx context.Context, hash share.Hash) (share.Share, error) {
	s, err := scanShare(st.rdb.QueryRowContext(ctx, "SELECT "+shareCols+" FROM shares WHERE token_hash = ?", hash[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return s, core.Errorf(core.CodeNotFound, "share not found")
	}
	return s, translate(err, "look up share")
}

// RevokeShare revokes a link for good and returns it; revoking it again
// changes nothing. core.CodeNotFound if the id is unknown.
func (st *Store) RevokeShare(ctx context.Context, id string) (share.Share, error) {
	now := st.now().UnixMilli()
	var s share.Share
	err := st.write(ctx, func(t *wtx) error {
		if _, err := t.tx.Exec("UPDATE shares SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", now, id); err != nil {
			return translate(err, "revoke share "+id)
		}
		var err error
		s, err = scanShare(t.tx.QueryRow("SELECT "+shareCols+" FROM shares WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return core.Errorf(core.CodeNotFound, "share %s not found", id)
		}
		return translate(err, "revoke share "+id)
	})
	return s, err
}

// RecordShareView counts one view of a link and stamps it with the store's
// clock. core.CodeNotFound if the id is unknown.
func (st *Store) RecordShareView(ctx context.Context, id string) error {
	now := st.now().UnixMilli()
	return st.write(ctx, func(t *wtx) error {
		res, err := t.tx.Exec("UPDATE shares SET views = views + 1, last_viewed_at = ? WHERE id = ?", now, id)
		if err != nil {
			return translate(err, "record a view of share "+id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return core.Errorf(core.CodeNotFound, "share %s not found", id)
		}
		return nil
	})
}

// nullInt stores 0 as NULL.
func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// ShareRecords returns a session's links with their token hashes, oldest
// first: what `prism migrate` copies.
func (st *Store) ShareRecords(ctx context.Context, sessionID string) ([]store.ShareRecord, error) {
	rows, err := st.rdb.QueryContext(ctx, "SELECT token_hash, "+shareCols+" FROM shares WHERE session_id = ? ORDER BY created_at, rowid", sessionID)
	if err != nil {
		return nil, translate(err, "read shares of session "+sessionID)
	}
	defer rows.Close()
	var out []store.ShareRecord
	for rows.Next() {
		var r store.ShareRecord
		var hash []byte
		s, err := scanShare(prefixed{rows, &hash})
		if err != nil {
			return nil, translate(err, "read shares of session "+sessionID)
		}
		if len(hash) != len(r.TokenHash) {
			return nil, fmt.Errorf("share %s: stored token hash has %d bytes", s.ID, len(hash))
		}
		r.Share = s
		copy(r.TokenHash[:], hash)
		out = append(out, r)
	}
	return out, translate(rows.Err(), "read shares of session "+sessionID)
}

// prefixed scans one extra leading column before a row's usual ones.
type prefixed struct {
	row interface{ Scan(...any) error }
	pre any
}

func (p prefixed) Scan(dest ...any) error { return p.row.Scan(append([]any{p.pre}, dest...)...) }

// Counts returns how many sessions, events and share links the database
// holds.
func (st *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	err := st.rdb.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM events), (SELECT count(*) FROM shares)").
		Scan(&c.Sessions, &c.Events, &c.Shares)
	return c, translate(err, "count sessions")
}
