-- The owner's signed-in browsers: one row per login cookie, keyed by the
-- SHA-256 hash of the cookie's random login id (the id itself is only in
-- the cookie). Signing out deletes the row, so the cookie is refused from
-- then on, after a restart too. expires_at is epoch milliseconds; expired
-- rows are dropped when the next login is stored.
CREATE TABLE owner_logins (
	id_hash    BLOB PRIMARY KEY CHECK (length(id_hash) = 32),
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
