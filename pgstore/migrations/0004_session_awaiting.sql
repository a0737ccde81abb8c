-- awaiting: how many approvals of the session wait for a person
-- (core.Summary.Awaiting; the SQLite store's migration 0004), so the list
-- shows the sessions waiting on someone without reading their events.
-- Rows written before this migration are recomputed on open
-- (core.SummaryVersion 2).
ALTER TABLE sessions ADD COLUMN awaiting bigint NOT NULL DEFAULT 0 CHECK (awaiting >= 0);
