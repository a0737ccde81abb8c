-- Sessions derived from OpenTelemetry spans get a source of their own,
-- 'otel' (they were stored as 'watch'; the SQLite store's migrations 0011
-- and 0012), so the watcher never replaces them.
ALTER TABLE sessions DROP CONSTRAINT sessions_source_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_source_check CHECK (source IN ('live', 'import', 'watch', 'otel'));
UPDATE sessions SET source = 'otel' WHERE source = 'watch' AND id LIKE 'otel-%';

-- Which session each trace's spans were derived into, as of the last batch
-- that touched the trace: a batch derives its traces' sessions once and
-- deletes the sessions these rows name that the new derivation no longer
-- gives. Traces stored before this table existed have no rows; a batch
-- touching one derives its spans before the batch as well, once.
CREATE TABLE otel_sessions (
	trace_id   text NOT NULL CHECK (length(trace_id) = 32),
	session_id text NOT NULL,
	PRIMARY KEY (trace_id, session_id)
);
