-- OpenTelemetry spans received on POST /v1/traces (the SQLite store's
-- migration 0009): the source of the sessions derived from them (source
-- 'watch', ids beginning "otel-"). One row per trace and span id, so an
-- exporter's retry inserts nothing. conversation_id is the span's own
-- gen_ai.conversation.id ('' without one); span is its protobuf encoding;
-- received_at is epoch milliseconds.
CREATE TABLE otel_spans (
	trace_id        text NOT NULL CHECK (length(trace_id) = 32),
	span_id         text NOT NULL CHECK (length(span_id) = 16),
	conversation_id text NOT NULL DEFAULT '',
	service         text NOT NULL DEFAULT '',
	received_at     bigint NOT NULL,
	span            bytea NOT NULL,
	PRIMARY KEY (trace_id, span_id)
);
CREATE INDEX otel_spans_conversation ON otel_spans (conversation_id) WHERE conversation_id <> '';
