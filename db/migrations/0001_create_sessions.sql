-- Sessions and their durable event logs.
--
-- sessions holds one row per session: its header (the dsh SessionHeader as
-- JSON) and the values derived from its events as they are appended, so a
-- session list never reads events. Times are epoch milliseconds.
CREATE TABLE sessions (
	id          TEXT PRIMARY KEY,
	header      TEXT NOT NULL,
	title       TEXT NOT NULL DEFAULT '',
	-- 1 once a session/title event named the session (it wins over the
	-- first user message).
	titled      INTEGER NOT NULL DEFAULT 0,
	status      TEXT NOT NULL DEFAULT 'idle'
	            CHECK (status IN ('running', 'idle', 'ended', 'interrupted')),
	parent_id   TEXT,
	-- Where the log comes from: 'live' (appended by prism), 'import' (a
	-- file) or 'watch' (tailed from a dsh sessions directory).
	source      TEXT NOT NULL DEFAULT 'live'
	            CHECK (source IN ('live', 'import', 'watch')),
	-- 1 for a one-shot subagent (its session ends with its turn).
	one_shot    INTEGER NOT NULL DEFAULT 0,
	calls       INTEGER NOT NULL DEFAULT 0,
	errors      INTEGER NOT NULL DEFAULT 0,
	last_seq    INTEGER NOT NULL DEFAULT -1,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;

-- No index on updated_at or status: every append updates the session row,
-- and keeping such indexes current would add index pages to every durable
-- commit (measured: about 2x the commit cost). Lists sort the sessions
-- table, which stays small next to events.
CREATE INDEX sessions_parent_id_idx ON sessions (parent_id) WHERE parent_id IS NOT NULL;

-- events is the log itself, one row per event, exactly as appended:
-- data is the event's JSON text byte for byte, surface_op its JSON
-- ("append" or {"op":"replace",…}), source_event_seqs a JSON array.
-- call_id is the tool call an event belongs to (tool/call, tool/result,
-- tool/code-dispatch*, approval/asked), for "one call's events".
CREATE TABLE events (
	session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq               INTEGER NOT NULL,
	type              TEXT NOT NULL,
	time              INTEGER NOT NULL,
	data              TEXT NOT NULL,
	ignorable         INTEGER NOT NULL DEFAULT 0,
	surface_op        TEXT,
	source_event_seqs TEXT,
	call_id           TEXT,
	PRIMARY KEY (session_id, seq)
) STRICT;

CREATE INDEX events_session_id_call_id_idx ON events (session_id, call_id) WHERE call_id IS NOT NULL;
