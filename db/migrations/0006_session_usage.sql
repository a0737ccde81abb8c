-- The models of a session and their token usage on its row, so the list
-- shows the model and prices the session without reading its events
-- (core.Summary.Model and Models). model is "m1" or "m1, m2" (the models
-- in the order they first answered; '' before any); model_usage is the
-- JSON array of core.ModelUsage sorted by model —
-- [{"model":"m1","inputTokens":1200,"outputTokens":85}] (core.TokenUsage's
-- fields, the cache and reasoning counts only when non-zero)
-- — or '' when no assistant message was logged. Rows written before this
-- migration are recomputed on open (core.SummaryVersion 3).
ALTER TABLE sessions ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN model_usage TEXT NOT NULL DEFAULT '';
