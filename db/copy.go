package db

import (
	"context"

	"prism/store"
)

// SpanRecords returns up to limit stored spans after the span (afterTrace,
// afterSpan) in trace and span id order ("", "" from the first), with the
// time each was received: prism migrate's page of spans.
func (st *Store) SpanRecords(ctx context.Context, afterTrace, afterSpan string, limit int) ([]store.SpanRecord, error) {
	rows, err := st.rdb.QueryContext(ctx, `SELECT trace_id, span_id, conversation_id, service, received_at, span FROM otel_spans
		WHERE (trace_id, span_id) > (?, ?) ORDER BY trace_id, span_id LIMIT ?`, afterTrace, afterSpan, limit)
	if err != nil {
		return nil, translate(err, "read spans")
	}
	defer rows.Close()
	var out []store.SpanRecord
	for rows.Next() {
		var r store.SpanRecord
		if err := rows.Scan(&r.TraceID, &r.SpanID, &r.ConversationID, &r.Service, &r.ReceivedAt, &r.Body); err != nil {
			return nil, translate(err, "read spans")
		}
		out = append(out, r)
	}
	return out, translate(rows.Err(), "read spans")
}

// CountSpans returns how many spans the store holds.
func (st *Store) CountSpans(ctx context.Context) (int64, error) {
	var n int64
	err := st.rdb.QueryRowContext(ctx, "SELECT count(*) FROM otel_spans").Scan(&n)
	return n, translate(err, "count spans")
}

// OwnerLogins returns the stored owner logins that expire after now (epoch
// milliseconds): what prism migrate copies.
func (st *Store) OwnerLogins(ctx context.Context, now int64) ([]store.OwnerLogin, error) {
	rows, err := st.rdb.QueryContext(ctx, "SELECT id_hash, expires_at FROM owner_logins WHERE expires_at > ? ORDER BY id_hash", now)
	if err != nil {
		return nil, translate(err, "read owner logins")
	}
	defer rows.Close()
	var out []store.OwnerLogin
	for rows.Next() {
		var h []byte
		var l store.OwnerLogin
		if err := rows.Scan(&h, &l.ExpiresAt); err != nil {
			return nil, translate(err, "read owner logins")
		}
		copy(l.IDHash[:], h)
		out = append(out, l)
	}
	return out, translate(rows.Err(), "read owner logins")
}
