-- The models of a session and their token usage on its row (the SQLite
-- store's migration 0006), so the list shows the model and prices the
-- session without reading its events (core.Summary.Model and Models).
-- model is "m1" or "m1, m2" (the models in the order they first answered;
-- '' before any); model_usage is the JSON array of core.ModelUsage sorted
-- by model (store.EncodeModelUsage), or '' when no assistant message was
-- logged. Rows written before this migration are recomputed on open
-- (core.SummaryVersion 3).
ALTER TABLE sessions ADD COLUMN model text NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN model_usage text NOT NULL DEFAULT '';
