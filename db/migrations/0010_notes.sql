-- Notes: facts about a session kept beside its log, never in it (a
-- person's label on a call, which call spawned a subagent, …). kind is a
-- store.NoteKindOf name; call_id the call the note is about (NULL: the
-- whole session); at_seq the seq from which it applies; data the kind's
-- JSON text, as written. label and commented are what search reads of a
-- label (its text, lower-cased, and whether it has a comment). A removed
-- note keeps its row with removed_at and removed_at_seq, so time travel
-- shows it between at_seq and removed_at_seq. Times are epoch
-- milliseconds. Deleting a session deletes its notes; replacing its log
-- does not (a note whose call is gone is not read).
CREATE TABLE notes (
	id             TEXT PRIMARY KEY,
	session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	kind           TEXT NOT NULL,
	call_id        TEXT,
	at_seq         INTEGER NOT NULL,
	time           INTEGER NOT NULL,
	author         TEXT NOT NULL DEFAULT '',
	data           TEXT NOT NULL,
	label          TEXT NOT NULL DEFAULT '',
	commented      INTEGER NOT NULL DEFAULT 0 CHECK (commented IN (0, 1)),
	removed_at     INTEGER,
	removed_at_seq INTEGER
) STRICT;

CREATE INDEX notes_session_idx ON notes (session_id, call_id);
CREATE INDEX notes_label_idx ON notes (label, session_id) WHERE kind = 'label' AND removed_at IS NULL;
