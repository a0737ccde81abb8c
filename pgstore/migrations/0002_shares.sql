-- Shared links: read-only access to one session through a bearer token
-- (the SQLite store's migration 0003). Only the token's SHA-256 hash is
-- stored (unique, so indexed). Times are epoch milliseconds; NULL
-- expires_at never expires, NULL up_to_seq shows the whole session, NULL
-- revoked_at and last_viewed_at mean "not yet". ord keeps the creation
-- order of links made in the same millisecond.
CREATE TABLE shares (
	id             text PRIMARY KEY,
	session_id     text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	token_hash     bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
	label          text NOT NULL DEFAULT '',
	created_at     bigint NOT NULL,
	expires_at     bigint,
	up_to_seq      bigint CHECK (up_to_seq >= 0),
	redact         boolean NOT NULL DEFAULT true,
	revoked_at     bigint,
	views          bigint NOT NULL DEFAULT 0,
	last_viewed_at bigint,
	ord            bigint GENERATED ALWAYS AS IDENTITY
);

CREATE INDEX shares_session_id_idx ON shares (session_id, created_at, ord);
