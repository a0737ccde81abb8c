-- Full-text search over what a user reads: the SQLite store's migration
-- 0005 in PostgreSQL's terms. Package core/search says what each event
-- contributes and splits its text into terms — the same Go code for both
-- engines; pgstore/search.go writes the terms as a tsvector literal (never
-- through to_tsvector, so no dictionary or stemming changes them) in the
-- transaction that appends the events.
--
-- search_docs holds one row per document: a session's own (title and cwd,
-- seq -1), a tool card (its tool/call and its result: seq is the call's, or
-- the result's when the call was never logged), or one event (a message, a
-- title, a turn's failure…). terms holds the document's terms with their
-- positions, weighted by column (A a tool's name or a title, B the text,
-- C results and reasoning, D the error identity); a column's terms are
-- numbered on from the previous column's with a gap, so a phrase never
-- matches across two columns.
CREATE TABLE search_docs (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        bigint NOT NULL,
	-- session | user | context | assistant | call | title | event
	kind       text NOT NULL,
	-- a card's call id (a model may reuse one: the cards of a call id are
	-- told apart by their seq)
	call_id    text,
	tool       text,
	-- a card's result seq (NULL while pending)
	result_seq bigint,
	-- the error code of a failed call or turn ('' for a failure without a
	-- code); NULL when it did not fail
	error      text,
	time       bigint NOT NULL,
	terms      tsvector NOT NULL
);

CREATE UNIQUE INDEX search_docs_session_seq_idx ON search_docs (session_id, seq);
CREATE INDEX search_docs_call_idx ON search_docs (session_id, call_id, seq) WHERE call_id IS NOT NULL;
CREATE INDEX search_docs_time_idx ON search_docs (time);
CREATE INDEX search_docs_tool_idx ON search_docs (lower(tool), time) WHERE tool IS NOT NULL;
CREATE INDEX search_docs_error_idx ON search_docs (lower(error), time) WHERE error IS NOT NULL;
CREATE INDEX search_docs_terms_idx ON search_docs USING gin (terms);

-- Which sessions are indexed, under which version of the index's rules
-- (pgstore.searchVersion): Open indexes the others, so a database written
-- before this migration, or under older rules, is indexed once.
CREATE TABLE search_sessions (
	session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	version    integer NOT NULL
);
