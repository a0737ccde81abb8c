-- A session is a child of another only when its header's origin is
-- "subagent" (core.SessionHeader.ChildOf): a fork names its source in
-- parentSession too, but is listed on its own, outlives its source and
-- imports without it. parent_id held every parentSession until now.
UPDATE sessions SET parent_id = NULL
WHERE parent_id IS NOT NULL AND COALESCE(json_extract(header, '$.origin'), '') <> 'subagent';
