-- The owner's signed-in browsers (the SQLite store's migration 0008): one
-- row per login cookie, keyed by the SHA-256 hash of the cookie's random
-- login id. Signing out on any node deletes the row, so every node refuses
-- the cookie from then on. expires_at is epoch milliseconds; expired rows
-- are dropped when the next login is stored.
CREATE TABLE owner_logins (
	id_hash    bytea PRIMARY KEY CHECK (length(id_hash) = 32),
	expires_at bigint NOT NULL
);
