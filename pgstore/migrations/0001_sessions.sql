-- Sessions and their durable event logs (the SQLite store's migrations
-- 0001 and 0002 in PostgreSQL's terms).
--
-- sessions holds one row per session: its header (the dsh SessionHeader as
-- JSON text, byte for byte) and core.Summary of its log, updated in the
-- transaction that appends, so a session list never reads events. Times
-- are epoch milliseconds. last_seq is the log's last seq (-1: empty); the
-- append transaction locks the row (FOR UPDATE), checks that the new
-- events continue last_seq and moves it, so two nodes appending to one
-- session are serialised here. log_gen counts replacements of the whole
-- log (a rewritten watched file); summary_version is the
-- core.SummaryVersion the summary was computed under.
CREATE TABLE sessions (
	id              text PRIMARY KEY,
	header          text NOT NULL,
	parent_id       text,
	source          text NOT NULL DEFAULT 'live' CHECK (source IN ('live', 'import', 'watch')),
	created_at      bigint NOT NULL,
	updated_at      bigint NOT NULL,
	summary_version integer NOT NULL DEFAULT 0,
	title           text NOT NULL DEFAULT '',
	titled          boolean NOT NULL DEFAULT false,
	status          text NOT NULL DEFAULT 'idle' CHECK (status IN ('running', 'idle', 'ended', 'interrupted')),
	one_shot        boolean NOT NULL DEFAULT false,
	last_seq        bigint NOT NULL DEFAULT -1 CHECK (last_seq >= -1),
	turns           bigint NOT NULL DEFAULT 0,
	steps           bigint NOT NULL DEFAULT 0,
	calls           bigint NOT NULL DEFAULT 0,
	results         bigint NOT NULL DEFAULT 0,
	errors          bigint NOT NULL DEFAULT 0,
	input_tokens    bigint NOT NULL DEFAULT 0,
	output_tokens   bigint NOT NULL DEFAULT 0,
	first_time      bigint NOT NULL DEFAULT 0,
	last_time       bigint NOT NULL DEFAULT 0,
	log_gen         integer NOT NULL DEFAULT 0
);

-- No index on updated_at or status: every append updates the row, and an
-- indexed column that changes defeats PostgreSQL's HOT updates.
CREATE INDEX sessions_parent_id_idx ON sessions (parent_id) WHERE parent_id IS NOT NULL;

-- events is the log itself, one row per event, exactly as appended: data
-- is the event's JSON text byte for byte (text, not jsonb, which would
-- reorder keys and rewrite numbers), surface_op its JSON ("append" or
-- {"op":"replace",…}), source_event_seqs a JSON array. call_id is the tool
-- call an event belongs to, for "one call's events".
CREATE TABLE events (
	session_id        text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq               bigint NOT NULL CHECK (seq >= 0),
	type              text NOT NULL,
	time              bigint NOT NULL,
	data              text NOT NULL,
	ignorable         boolean NOT NULL DEFAULT false,
	surface_op        text,
	source_event_seqs text,
	call_id           text,
	PRIMARY KEY (session_id, seq)
);

CREATE INDEX events_session_id_call_id_idx ON events (session_id, call_id) WHERE call_id IS NOT NULL;

-- Contiguity, enforced by the database and not by trust: the primary key
-- refuses a duplicate seq, and this trigger refuses an event whose
-- predecessor is not in the log (checked when the inserting statement
-- ends, so one statement may insert a run of events).
CREATE FUNCTION events_contiguous() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.seq > 0 AND NOT EXISTS (SELECT 1 FROM events WHERE session_id = NEW.session_id AND seq = NEW.seq - 1) THEN
		RAISE EXCEPTION 'session %: event seq % does not continue the log (seq % is missing)', NEW.session_id, NEW.seq, NEW.seq - 1
			USING ERRCODE = 'integrity_constraint_violation';
	END IF;
	RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER events_contiguous AFTER INSERT ON events
	DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION events_contiguous();
