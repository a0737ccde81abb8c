package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/share"
	"prism/store"
)

const shareCols = `id, session_id, label, created_at, expires_at, up_to_seq, redact, revoked_at, views, last_viewed_at, labels, children`

func scanShare(row pgx.Row) (share.Share, error) {
	var s share.Share
	var expires, revoked, viewed *int64
	if err := row.Scan(&s.ID, &s.SessionID, &s.Label, &s.CreatedAt, &expires, &s.UpToSeq, &s.Redact, &revoked, &s.Views, &viewed, &s.Labels, &s.Children); err != nil {
		return s, err
	}
	for _, p := range []struct {
		v   *int64
		dst *int64
	}{{expires, &s.ExpiresAt}, {revoked, &s.RevokedAt}, {viewed, &s.LastViewedAt}} {
		if p.v != nil {
			*p.dst = *p.v
		}
	}
	return s, nil
}

// CreateShare makes a link to a session and returns it with its token,
// which is not stored (only its SHA-256 hash is). The rules and errors are
// the SQLite store's (share.Spec.Check).
func (st *Store) CreateShare(ctx context.Context, spec share.Spec) (share.Share, string, error) {
	now := st.now().UnixMilli()
	label, err := spec.Check(now)
	if err != nil {
		return share.Share{}, "", err
	}
	tok, hash := share.NewToken()
	s := share.Share{ID: core.NewID(), SessionID: spec.SessionID, Label: label, CreatedAt: now,
		ExpiresAt: spec.ExpiresAt, UpToSeq: spec.UpToSeq, Redact: spec.Redact, Labels: spec.Labels, Children: spec.Children}
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var lastSeq int64
		err := tx.QueryRow(ctx, "SELECT last_seq FROM sessions WHERE id = $1 FOR SHARE", spec.SessionID).Scan(&lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NotFound(spec.SessionID)
		}
		if err != nil {
			return err
		}
		if err := spec.CheckSeq(lastSeq); err != nil {
			return err
		}
		var expires *int64
		if s.ExpiresAt != 0 {
			expires = &s.ExpiresAt
		}
		_, err = tx.Exec(ctx, `INSERT INTO shares (id, session_id, token_hash, label, created_at, expires_at, up_to_seq, redact, labels, children)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, s.ID, s.SessionID, hash[:], s.Label, s.CreatedAt, expires, s.UpToSeq, s.Redact, s.Labels, s.Children)
		return err
	})
	if err != nil {
		return share.Share{}, "", translate(err, "create share for session "+spec.SessionID)
	}
	return s, tok, nil
}

// Shares lists a session's links, oldest first (revoked ones included).
func (st *Store) Shares(ctx context.Context, sessionID string) ([]share.Share, error) {
	rows, err := st.pool.Query(ctx, "SELECT "+shareCols+" FROM shares WHERE session_id = $1 ORDER BY created_at, ord", sessionID)
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
	s, err := scanShare(st.pool.QueryRow(ctx, "SELECT "+shareCols+" FROM shares WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return s, core.Errorf(core.CodeNotFound, "share %s not found", id)
	}
	return s, translate(err, "read share "+id)
}

// ShareByToken returns the link whose token has this hash, revoked or
// expired ones included; core.CodeNotFound when none has.
func (st *Store) ShareByToken(ctx context.Context, hash share.Hash) (share.Share, error) {
	s, err := scanShare(st.pool.QueryRow(ctx, "SELECT "+shareCols+" FROM shares WHERE token_hash = $1", hash[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return s, core.Errorf(core.CodeNotFound, "share not found")
	}
	return s, translate(err, "look up share")
}

// RevokeShare revokes a link for good and returns it; revoking it again
// changes nothing. core.CodeNotFound if the id is unknown. The streams of
// the link open on other nodes end when they next check it.
func (st *Store) RevokeShare(ctx context.Context, id string) (share.Share, error) {
	now := st.now().UnixMilli()
	s, err := scanShare(st.pool.QueryRow(ctx, `UPDATE shares SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING `+shareCols, now, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return s, core.Errorf(core.CodeNotFound, "share %s not found", id)
	}
	return s, translate(err, "revoke share "+id)
}

// RecordShareView counts one view of a link and stamps it with the store's
// clock. core.CodeNotFound if the id is unknown.
func (st *Store) RecordShareView(ctx context.Context, id string) error {
	tag, err := st.pool.Exec(ctx, "UPDATE shares SET views = views + 1, last_viewed_at = $1 WHERE id = $2", st.now().UnixMilli(), id)
	if err != nil {
		return translate(err, "record a view of share "+id)
	}
	if tag.RowsAffected() == 0 {
		return core.Errorf(core.CodeNotFound, "share %s not found", id)
	}
	return nil
}

// PutShares stores links copied from another database, token hashes
// included; a link whose id is already stored is left as it is. It
// returns how many it added.
func (st *Store) PutShares(ctx context.Context, recs []store.ShareRecord) (int, error) {
	added := 0
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		added = 0
		for _, r := range recs {
			s := r.Share
			tag, err := tx.Exec(ctx, `INSERT INTO shares (id, session_id, token_hash, label, created_at, expires_at, up_to_seq, redact, revoked_at, views, last_viewed_at, labels, children)
				VALUES ($1, $2, $3, $4, $5, NULLIF($6::bigint, 0), $7, $8, NULLIF($9::bigint, 0), $10, NULLIF($11::bigint, 0), $12, $13) ON CONFLICT (id) DO NOTHING`,
				s.ID, s.SessionID, r.TokenHash[:], s.Label, s.CreatedAt, s.ExpiresAt, s.UpToSeq, s.Redact, s.RevokedAt, s.Views, s.LastViewedAt, s.Labels, s.Children)
			if err != nil {
				return err
			}
			added += int(tag.RowsAffected())
		}
		return nil
	})
	return added, translate(err, "copy share links")
}

// Counts returns how many sessions, events and share links the database
// holds.
func (st *Store) Counts(ctx context.Context) (store.Counts, error) {
	var c store.Counts
	err := st.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM events), (SELECT count(*) FROM shares)").
		Scan(&c.Sessions, &c.Events, &c.Shares)
	return c, translate(err, "count sessions")
}
