-- A share link nests the session's subagents only when it was made asking
-- for them (the SQLite store's migration 0016): off for every link made
-- before.
ALTER TABLE shares ADD COLUMN children boolean NOT NULL DEFAULT false;
