-- OpenTelemetry spans received on POST /v1/traces: the source of the
-- sessions derived from them (source 'watch', ids beginning "otel-"). One
-- row per trace and span id, so an exporter's retry inserts nothing.
-- conversation_id is the span's own gen_ai.conversation.id ('' without
-- one), to find a conversation's traces; span is the span's protobuf
-- encoding; received_at is epoch milliseconds.
CREATE TABLE otel_spans (
	trace_id        TEXT NOT NULL CHECK (length(trace_id) = 32),
	span_id         TEXT NOT NULL CHECK (length(span_id) = 16),
	conversation_id TEXT NOT NULL DEFAULT '',
	service         TEXT NOT NULL DEFAULT '',
	received_at     INTEGER NOT NULL,
	span            BLOB NOT NULL,
	PRIMARY KEY (trace_id, span_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX otel_spans_conversation ON otel_spans (conversation_id) WHERE conversation_id <> '';
