-- Source info: what a session read from another agent's file is (kind,
-- CLI version, cwd, git branch, file, the source's title, a missing
-- parent), kept beside the header, never in it: info is core.SourceInfo's
-- JSON text. Deleting a session deletes its row.
CREATE TABLE session_sources (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	info       TEXT NOT NULL
) STRICT;
