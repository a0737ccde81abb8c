-- A session is a child of another only when its header's origin is
-- "subagent" (core.SessionHeader.ChildOf; the SQLite store's migration
-- 0011): a fork names its source in parentSession too, but is listed on
-- its own, outlives its source and imports without it.
UPDATE sessions SET parent_id = NULL
WHERE parent_id IS NOT NULL AND COALESCE(header::jsonb ->> 'origin', '') <> 'subagent';
