package pgstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"prism/store"
)

// spansLock serialises span receipts across nodes: which sessions a batch
// changes is known only once its spans are stored and derived, so the
// sessions' row locks cannot be taken first.
const spansLock int64 = 0x7072_6973_6d00_0003 // "prism\0" 3

// maxSpanTraces bounds how many traces one batch may pull into a
// derivation through shared conversation ids.
const maxSpanTraces = 10000

// ReceiveSpans stores a batch of OpenTelemetry spans and brings the
// sessions derived from them up to date in one transaction, as the SQLite
// store's ReceiveSpans does (see there). The transaction holds a
// transaction-scoped advisory lock shared by every node, and then the row
// locks of the sessions it writes, so two nodes receiving batches of one
// trace give the same log as one node.
func (st *Store) ReceiveSpans(ctx context.Context, spans []store.SpanRecord, derive store.SpanDeriver) (store.SpanReceipt, error) {
	var out store.SpanReceipt
	now := time.Now().UnixMilli()
	err := st.write(ctx, func(t *wtx) error {
		out = store.SpanReceipt{}
		if _, err := t.tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", spansLock); err != nil {
			return translate(err, "store spans: lock")
		}
		added := map[[2]string]bool{}
		traces := map[string]bool{}
		for _, s := range spans {
			tag, err := t.tx.Exec(ctx, `INSERT INTO otel_spans (trace_id, span_id, conversation_id, service, received_at, span)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, s.TraceID, s.SpanID, s.ConversationID, s.Service, now, s.Body)
			if err != nil {
				return translate(err, "store span "+s.TraceID+"/"+s.SpanID)
			}
			if tag.RowsAffected() == 1 {
				added[[2]string{s.TraceID, s.SpanID}] = true
				traces[s.TraceID] = true
			}
		}
		out.Added = len(added)
		if len(added) == 0 {
			return nil
		}
		if err := t.conversationTraces(ctx, traces); err != nil {
			return err
		}
		rows, err := t.tx.Query(ctx, `SELECT trace_id, span_id, conversation_id, service, span FROM otel_spans
			WHERE trace_id = ANY($1) ORDER BY trace_id, span_id`, sortedKeys(traces))
		if err != nil {
			return translate(err, "read spans")
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.SpanRecord, error) {
			var s store.SpanRecord
			err := r.Scan(&s.TraceID, &s.SpanID, &s.ConversationID, &s.Service, &s.Body)
			return s, err
		})
		if err != nil {
			return translate(err, "read spans")
		}
		oldIDs, err := t.derivedBefore(ctx, traces, all, added, derive)
		if err != nil {
			return err
		}
		newLogs, err := derive(all)
		if err != nil {
			return fmt.Errorf("derive sessions from spans: %w", err)
		}
		if err := t.recordDerived(ctx, traces, newLogs); err != nil {
			return err
		}
		ids := slices.Clone(oldIDs)
		for _, l := range newLogs {
			ids = append(ids, l.Header.ID)
		}
		if err := t.lock(ctx, ids); err != nil {
			return err
		}
		keep := map[string]bool{}
		for _, l := range newLogs {
			keep[l.Header.ID] = true
			s := t.touched[l.Header.ID]
			if s.deleted {
				continue
			}
			before := int(s.sum.LastSeq + 1)
			outcome, n, err := t.syncLog(ctx, l.Header, l.Events, store.SourceOTel, true)
			if err != nil {
				return fmt.Errorf("sync session %s from spans: %w", l.Header.ID, err)
			}
			if outcome != store.ImportUnchanged {
				out.Sessions = append(out.Sessions, store.ImportResult{SessionID: l.Header.ID, Outcome: outcome,
					Events: len(l.Events), Added: n, Before: before})
			}
		}
		for _, id := range oldIDs {
			s := t.touched[id]
			if keep[id] || !s.exists || s.deleted || s.source != store.SourceOTel {
				continue
			}
			if _, err := t.deleteTree(ctx, id); err != nil {
				return err
			}
			out.Removed = append(out.Removed, id)
		}
		return nil
	})
	if err != nil {
		return store.SpanReceipt{}, err
	}
	return out, nil
}

// derivedBefore returns the sessions traces were derived into before this
// batch, sorted: those otel_sessions records, and, when some trace that
// had spans before the batch has no record (stored before the table
// existed), those of deriving the spans held before the batch.
func (t *wtx) derivedBefore(ctx context.Context, traces map[string]bool, all []store.SpanRecord, added map[[2]string]bool, derive store.SpanDeriver) ([]string, error) {
	rows, err := t.strings(ctx, `SELECT trace_id || ' ' || session_id FROM otel_sessions WHERE trace_id = ANY($1)`, sortedKeys(traces))
	if err != nil {
		return nil, err
	}
	return store.DerivedBefore(rows, all, added, derive)
}

// recordDerived makes otel_sessions say which of logs each of traces was
// derived into.
func (t *wtx) recordDerived(ctx context.Context, traces map[string]bool, logs []store.DerivedLog) error {
	if _, err := t.tx.Exec(ctx, `DELETE FROM otel_sessions WHERE trace_id = ANY($1)`, sortedKeys(traces)); err != nil {
		return translate(err, "record derived sessions")
	}
	var tr, id []string
	for _, l := range logs {
		for _, trace := range l.Traces {
			if traces[trace] {
				tr, id = append(tr, trace), append(id, l.Header.ID)
			}
		}
	}
	if len(tr) == 0 {
		return nil
	}
	if _, err := t.tx.Exec(ctx, `INSERT INTO otel_sessions (trace_id, session_id) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`, tr, id); err != nil {
		return translate(err, "record derived sessions")
	}
	return nil
}

// conversationTraces adds to traces every trace that shares a conversation
// id with one of them, until none is added.
func (t *wtx) conversationTraces(ctx context.Context, traces map[string]bool) error {
	seenConv := map[string]bool{}
	frontier := sortedKeys(traces)
	for len(frontier) > 0 {
		if len(traces) > maxSpanTraces {
			return fmt.Errorf("spans: more than %d traces share conversation ids with this batch", maxSpanTraces)
		}
		convs, err := t.strings(ctx, `SELECT DISTINCT conversation_id FROM otel_spans WHERE conversation_id <> '' AND trace_id = ANY($1)`, frontier)
		if err != nil {
			return err
		}
		var fresh []string
		for _, c := range convs {
			if !seenConv[c] {
				seenConv[c] = true
				fresh = append(fresh, c)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		more, err := t.strings(ctx, `SELECT DISTINCT trace_id FROM otel_spans WHERE conversation_id = ANY($1)`, fresh)
		if err != nil {
			return err
		}
		frontier = frontier[:0]
		for _, tr := range more {
			if !traces[tr] {
				traces[tr] = true
				frontier = append(frontier, tr)
			}
		}
	}
	return nil
}

func (t *wtx) strings(ctx context.Context, query string, arg []string) ([]string, error) {
	rows, err := t.tx.Query(ctx, query, arg)
	if err != nil {
		return nil, translate(err, "read spans")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate(err, "read spans")
	}
	return out, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
