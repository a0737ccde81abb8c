-- Shared links: read-only access to one session through a bearer token.
--
-- Only the token's SHA-256 hash is stored (token_hash, unique and so
-- indexed): the token itself is shown once, when the link is made. Times
-- are epoch milliseconds; NULL expires_at never expires, NULL up_to_seq
-- shows the whole session (live while it runs), NULL revoked_at and
-- last_viewed_at mean "not yet". Deleting a session deletes its links.
CREATE TABLE shares (
	id             TEXT PRIMARY KEY,
	session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	token_hash     BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
	label          TEXT NOT NULL DEFAULT '',
	created_at     INTEGER NOT NULL,
	expires_at     INTEGER,
	up_to_seq      INTEGER CHECK (up_to_seq >= 0),
	redact         INTEGER NOT NULL DEFAULT 1 CHECK (redact IN (0, 1)),
	revoked_at     INTEGER,
	views          INTEGER NOT NULL DEFAULT 0,
	last_viewed_at INTEGER
) STRICT;

CREATE INDEX shares_session_id_idx ON shares (session_id, created_at);
