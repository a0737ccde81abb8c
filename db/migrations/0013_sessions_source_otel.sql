-- prism:writable_schema
-- Sessions derived from OpenTelemetry spans get a source of their own,
-- 'otel' (they were stored as 'watch'). SQLite cannot alter a CHECK
-- constraint; widening one is SQLite's documented writable_schema
-- procedure (lang_altertable.html, "making other kinds of table schema
-- changes"): rewrite the table's CREATE statement in sqlite_schema; the
-- migration runner turns writable_schema on around this file and bumps
-- schema_version after it (the marker line above), in the migration's
-- transaction. Every stored row satisfies the wider constraint.
UPDATE sqlite_schema
	SET sql = replace(sql, '''live'', ''import'', ''watch'')', '''live'', ''import'', ''watch'', ''otel'')')
	WHERE type = 'table' AND name = 'sessions';
