-- A share link shows the session's labels only when it was made asking
-- for them (the SQLite store's migration 0013): off for every link made
-- before.
ALTER TABLE shares ADD COLUMN labels boolean NOT NULL DEFAULT false;
