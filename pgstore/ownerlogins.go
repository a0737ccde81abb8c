package pgstore

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/jackc/pgx/v5"
)

// AddOwnerLogin stores an owner login (the SHA-256 hash of its cookie's id,
// with its expiry in epoch milliseconds) and drops the expired ones. It
// implements ownerauth.Logins; every node reads the same rows.
func (st *Store) AddOwnerLogin(ctx context.Context, idHash [sha256.Size]byte, expiresAt int64) error {
	now := st.now().UnixMilli()
	err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM owner_logins WHERE expires_at <= $1", now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO owner_logins (id_hash, expires_at) VALUES ($1, $2)", idHash[:], expiresAt)
		return err
	})
	return translate(err, "store an owner login")
}

// OwnerLoginValid reports whether an owner login is stored and expires
// after now (epoch milliseconds).
func (st *Store) OwnerLoginValid(ctx context.Context, idHash [sha256.Size]byte, now int64) (bool, error) {
	var exp int64
	err := st.pool.QueryRow(ctx, "SELECT expires_at FROM owner_logins WHERE id_hash = $1", idHash[:]).Scan(&exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err, "look up an owner login")
	}
	return exp > now, nil
}

// RevokeOwnerLogin deletes an owner login (signing out, on whichever node);
// an unknown one is no error.
func (st *Store) RevokeOwnerLogin(ctx context.Context, idHash [sha256.Size]byte) error {
	_, err := st.pool.Exec(ctx, "DELETE FROM owner_logins WHERE id_hash = $1", idHash[:])
	return translate(err, "revoke an owner login")
}
