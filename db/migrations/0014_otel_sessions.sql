-- The sessions derived from OpenTelemetry spans are source 'otel' (the
-- CHECK widened by migration 0011): the ones stored before as 'watch'
-- (their ids begin "otel-") move over, so the watcher never replaces them.
UPDATE sessions SET source = 'otel' WHERE source = 'watch' AND id LIKE 'otel-%';

-- Which session each trace's spans were derived into, as of the last batch
-- that touched the trace: a batch derives its traces' sessions once and
-- deletes the sessions these rows name that the new derivation no longer
-- gives (a trace's session absorbed by its conversation's). Traces stored
-- before this table existed have no rows; a batch touching one derives its
-- spans before the batch as well, once.
CREATE TABLE otel_sessions (
	trace_id   TEXT NOT NULL CHECK (length(trace_id) = 32),
	session_id TEXT NOT NULL,
	PRIMARY KEY (trace_id, session_id)
) STRICT, WITHOUT ROWID;
