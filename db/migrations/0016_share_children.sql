-- A share link nests the session's subagents (its children, redacted as
-- the rest) only when it was made asking for them (the share form's
-- "include subagents" box, the API's children): off for every link made
-- before.
ALTER TABLE shares ADD COLUMN children INTEGER NOT NULL DEFAULT 0 CHECK (children IN (0, 1));
