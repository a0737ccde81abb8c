-- The rest of core.Summary on each session row, so the list and the
-- inspector header read one fold: turns, steps, results, tokens and the
-- span of event times. summary_version is the core.SummaryVersion a row's
-- values were computed under; Open recomputes rows of older versions (all
-- of them after this migration) by folding their logs again.
ALTER TABLE sessions ADD COLUMN summary_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN results INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN first_time INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_time INTEGER NOT NULL DEFAULT 0;
