-- A share link shows the session's labels only when it was made asking
-- for them (the share form's "include labels" box, the API's labels):
-- off for every link made before.
ALTER TABLE shares ADD COLUMN labels INTEGER NOT NULL DEFAULT 0 CHECK (labels IN (0, 1));
