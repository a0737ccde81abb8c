package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
)

// AddOwnerLogin stores an owner login (the SHA-256 hash of its cookie's id,
// with its expiry in epoch milliseconds) and drops the expired ones. It
// implements ownerauth.Logins.
func (st *Store) AddOwnerLogin(ctx context.Context, idHash [sha256.Size]byte, expiresAt int64) error {
	now := st.now().UnixMilli()
	return st.write(ctx, func(t *wtx) error {
		if _, err := t.tx.Exec("DELETE FROM owner_logins WHERE expires_at <= ?", now); err != nil {
			return translate(err, "drop expired owner logins")
		}
		_, err := t.tx.Exec("INSERT INTO owner_logins (id_hash, expires_at) VALUES (?, ?)", idHash[:], expiresAt)
		return translate(err, "store an owner login")
	})
}

// OwnerLoginValid reports whether an owner login is stored and expires
// after now (epoch milliseconds).
func (st *Store) OwnerLoginValid(ctx context.Context, idHash [sha256.Size]byte, now int64) (bool, error) {
	var exp int64
	err := st.rdb.QueryRowContext(ctx, "SELECT expires_at FROM owner_logins WHERE id_hash = ?", idHash[:]).Scan(&exp)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err, "look up an owner login")
	}
	return exp > now, nil
}

// RevokeOwnerLogin deletes an owner login (signing out); an unknown one is
// no error.
func (st *Store) RevokeOwnerLogin(ctx context.Context, idHash [sha256.Size]byte) error {
	return st.write(ctx, func(t *wtx) error {
		_, err := t.tx.Exec("DELETE FROM owner_logins WHERE id_hash = ?", idHash[:])
		return translate(err, "revoke an owner login")
	})
}
