-- The search index lags the log (db/searchlag.go): appends commit their
-- events without indexing them, and the writer files them in batches, in
-- index transactions of their own. search_sessions.through is each
-- session's watermark: every event with seq <= through is in the index and
-- none after it. An index transaction moves it in the same transaction as
-- the documents it writes, so a crash between the two commits leaves a
-- watermark behind the log, never ahead of it, and Open catches up.
--
-- Until this migration the index was written in the transaction that
-- appended the events: every indexed session is indexed through its last
-- event. (SQLite only: PostgreSQL keeps its index in the append
-- transaction.)
ALTER TABLE search_sessions ADD COLUMN through INTEGER NOT NULL DEFAULT -1;
-- (A row whose session is gone — deleted with foreign keys off — keeps -1.)
UPDATE search_sessions SET through = coalesce((SELECT last_seq FROM sessions s WHERE s.id = search_sessions.session_id), -1);
