-- Notes: facts about a session kept beside its log, never in it (the
-- SQLite store's migration 0009). kind is a store.NoteKindOf name;
-- call_id the call the note is about (NULL: the whole session); at_seq
-- the seq from which it applies; data the kind's JSON text as written
-- (text, not jsonb: lossless). label and commented are what search reads
-- of a label. A removed note keeps its row with removed_at and
-- removed_at_seq. Times are epoch milliseconds; ord keeps the order of
-- notes made in the same millisecond. Deleting a session deletes its
-- notes; replacing its log does not (a note whose call is gone is not
-- read).
CREATE TABLE notes (
	id             text PRIMARY KEY,
	session_id     text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	kind           text NOT NULL,
	call_id        text,
	at_seq         bigint NOT NULL,
	time           bigint NOT NULL,
	author         text NOT NULL DEFAULT '',
	data           text NOT NULL,
	label          text NOT NULL DEFAULT '',
	commented      boolean NOT NULL DEFAULT false,
	removed_at     bigint,
	removed_at_seq bigint,
	ord            bigint GENERATED ALWAYS AS IDENTITY
);

CREATE INDEX notes_session_idx ON notes (session_id, call_id);
CREATE INDEX notes_label_idx ON notes (label, session_id) WHERE kind = 'label' AND removed_at IS NULL;
