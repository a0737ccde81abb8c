-- Full-text search over what a user reads (package core/search says what
-- each event contributes and splits the text into terms; db/search.go keeps
-- the index in the transaction that appends the events — until 0007: the
-- index now lags the log, filed in transactions of its own, see
-- db/searchlag.go).
--
-- search_docs holds one row per document: a session's own (title and cwd,
-- seq -1), a tool card (its tool/call and its result: seq is the call's, or
-- the result's when the call was never logged), or one event (a message, a
-- title, a turn's failure…). Its id is the docid of search_fts.
CREATE TABLE search_docs (
	id         INTEGER PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	-- session | user | context | assistant | call | title | event
	kind       TEXT NOT NULL,
	-- a card's call id (a model may reuse one: the cards of a call id are
	-- told apart by their seq)
	call_id    TEXT,
	tool       TEXT,
	-- a card's result seq (NULL while pending)
	result_seq INTEGER,
	-- the error code of a failed call or turn ('' for a failure without a
	-- code); NULL when it did not fail
	error      TEXT,
	time       INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX search_docs_session_seq_idx ON search_docs (session_id, seq);
CREATE INDEX search_docs_call_idx ON search_docs (session_id, call_id, seq) WHERE call_id IS NOT NULL;
CREATE INDEX search_docs_time_idx ON search_docs (time);
CREATE INDEX search_docs_tool_idx ON search_docs (tool COLLATE NOCASE, time) WHERE tool IS NOT NULL;
CREATE INDEX search_docs_error_idx ON search_docs (error COLLATE NOCASE, time) WHERE error IS NOT NULL;

-- The terms of each document's sections by column (see core/search.Col),
-- space-separated: FTS4's simple tokenizer keeps them as they are. FTS4,
-- not FTS5: mattn/go-sqlite3 builds FTS3/4 by default and FTS5 only with a
-- build tag.
CREATE VIRTUAL TABLE search_fts USING fts4 (name, body, more, err, tokenize=simple);

-- Which sessions are indexed, under which version of the index's rules
-- (db.searchVersion): Open indexes the others, so a database written before
-- this migration, or under older rules, is indexed once.
CREATE TABLE search_sessions (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	version    INTEGER NOT NULL
) STRICT;
