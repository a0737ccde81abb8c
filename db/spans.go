package db

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"prism/store"
)

// maxSpanTraces bounds how many traces one batch may pull into a
// derivation through shared conversation ids.
const maxSpanTraces = 10000

// ReceiveSpans stores a batch of OpenTelemetry spans and brings the
// sessions derived from them up to date, in one write transaction: it
// inserts the spans it does not hold yet (a span already stored, by trace
// and span id, is left as it is), loads every stored span of the traces the
// new spans belong to and of the traces sharing a conversation id with
// them, and derives their sessions with derive, once. Each session derived
// is synced as the watcher syncs a file (source otel): created, extended
// when its stored log is a prefix of the new one, replaced when a late span
// changed what came before (share links stay). A session these traces were
// derived into before (otel_sessions) that the derivation no longer gives
// is deleted; for traces stored before otel_sessions existed, the spans
// held before the batch are derived as well to find them. A batch of spans
// that were all stored already changes nothing. A session deleted by its
// owner while this store is open is not recreated.
func (st *Store) ReceiveSpans(ctx context.Context, spans []store.SpanRecord, derive store.SpanDeriver) (store.SpanReceipt, error) {
	var out store.SpanReceipt
	now := st.now().UnixMilli()
	err := st.write(ctx, func(t *wtx) error {
		out = store.SpanReceipt{}
		ins, err := t.tx.Prepare(`INSERT INTO otel_spans (trace_id, span_id, conversation_id, service, received_at, span)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
		if err != nil {
			return translate(err, "store spans")
		}
		defer ins.Close()
		added := map[[2]string]bool{}
		traces := map[string]bool{}
		for _, s := range spans {
			r, err := ins.Exec(s.TraceID, s.SpanID, s.ConversationID, s.Service, now, s.Body)
			if err != nil {
				return translate(err, "store span "+s.TraceID+"/"+s.SpanID)
			}
			if n, _ := r.RowsAffected(); n == 1 {
				added[[2]string{s.TraceID, s.SpanID}] = true
				traces[s.TraceID] = true
			}
		}
		out.Added = len(added)
		if len(added) == 0 {
			return nil
		}
		if err := t.conversationTraces(traces); err != nil {
			return err
		}
		all, err := t.spansOf(traces)
		if err != nil {
			return err
		}
		oldIDs, err := t.derivedBefore(traces, all, added, derive)
		if err != nil {
			return err
		}
		newLogs, err := derive(all)
		if err != nil {
			return fmt.Errorf("derive sessions from spans: %w", err)
		}
		if err := t.recordDerived(traces, newLogs); err != nil {
			return err
		}
		keep := map[string]bool{}
		for _, l := range newLogs {
			keep[l.Header.ID] = true
			s, err := t.state(l.Header.ID)
			if err != nil {
				return err
			}
			if s.deleted || !s.exists && st.WasDeleted(l.Header.ID) {
				continue
			}
			before := int(s.sum.LastSeq + 1)
			outcome, n, err := t.syncLog(l.Header, l.Events, store.SourceOTel, true)
			if err != nil {
				return fmt.Errorf("sync session %s from spans: %w", l.Header.ID, err)
			}
			if outcome != store.ImportUnchanged {
				out.Sessions = append(out.Sessions, store.ImportResult{SessionID: l.Header.ID, Outcome: outcome,
					Events: len(l.Events), Added: n, Before: before})
			}
		}
		for _, id := range oldIDs {
			if keep[id] {
				continue
			}
			s, err := t.state(id)
			if err != nil {
				return err
			}
			if !s.exists || s.deleted || s.source != store.SourceOTel {
				continue
			}
			if _, err := t.deleteTree(id); err != nil {
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
func (t *wtx) derivedBefore(traces map[string]bool, all []store.SpanRecord, added map[[2]string]bool, derive store.SpanDeriver) ([]string, error) {
	rows, err := t.column(`SELECT trace_id || ' ' || session_id FROM otel_sessions WHERE trace_id IN `, keys(traces))
	if err != nil {
		return nil, err
	}
	return store.DerivedBefore(rows, all, added, derive)
}

// recordDerived makes otel_sessions say which of logs each of traces was
// derived into.
func (t *wtx) recordDerived(traces map[string]bool, logs []store.DerivedLog) error {
	tr := keys(traces)
	for len(tr) > 0 {
		n := min(len(tr), 500)
		chunk := make([]any, n)
		for i := range chunk {
			chunk[i] = tr[i]
		}
		tr = tr[n:]
		if _, err := t.tx.Exec(`DELETE FROM otel_sessions WHERE trace_id IN (?`+strings.Repeat(",?", n-1)+`)`, chunk...); err != nil {
			return translate(err, "record derived sessions")
		}
	}
	ins, err := t.tx.Prepare(`INSERT INTO otel_sessions (trace_id, session_id) VALUES (?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return translate(err, "record derived sessions")
	}
	defer ins.Close()
	for _, l := range logs {
		for _, trace := range l.Traces {
			if !traces[trace] {
				continue
			}
			if _, err := ins.Exec(trace, l.Header.ID); err != nil {
				return translate(err, "record derived sessions")
			}
		}
	}
	return nil
}

// conversationTraces adds to traces every trace that shares a conversation
// id with one of them, until none is added.
func (t *wtx) conversationTraces(traces map[string]bool) error {
	seenConv := map[string]bool{}
	frontier := keys(traces)
	for len(frontier) > 0 {
		if len(traces) > maxSpanTraces {
			return fmt.Errorf("spans: more than %d traces share conversation ids with this batch", maxSpanTraces)
		}
		convs, err := t.column(`SELECT DISTINCT conversation_id FROM otel_spans WHERE conversation_id <> '' AND trace_id IN `, frontier)
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
		more, err := t.column(`SELECT DISTINCT trace_id FROM otel_spans WHERE conversation_id IN `, fresh)
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

// column runs query (ending in "IN ") over args, in chunks, and returns
// the first column of every row.
func (t *wtx) column(query string, args []string) ([]string, error) {
	var out []string
	for len(args) > 0 {
		n := min(len(args), 500)
		chunk := make([]any, n)
		for i := range chunk {
			chunk[i] = args[i]
		}
		args = args[n:]
		rows, err := t.tx.Query(query+"(?"+strings.Repeat(",?", n-1)+")", chunk...)
		if err != nil {
			return nil, translate(err, "read spans")
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return nil, translate(err, "read spans")
			}
			out = append(out, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err, "read spans")
		}
	}
	return out, nil
}

// spansOf loads every stored span of traces, ordered by trace and span id.
func (t *wtx) spansOf(traces map[string]bool) ([]store.SpanRecord, error) {
	ids := keys(traces)
	var out []store.SpanRecord
	for len(ids) > 0 {
		n := min(len(ids), 500)
		chunk := make([]any, n)
		for i := range chunk {
			chunk[i] = ids[i]
		}
		ids = ids[n:]
		rows, err := t.tx.Query(`SELECT trace_id, span_id, conversation_id, service, span FROM otel_spans
			WHERE trace_id IN (?`+strings.Repeat(",?", n-1)+`) ORDER BY trace_id, span_id`, chunk...)
		if err != nil {
			return nil, translate(err, "read spans")
		}
		for rows.Next() {
			var r store.SpanRecord
			if err := rows.Scan(&r.TraceID, &r.SpanID, &r.ConversationID, &r.Service, &r.Body); err != nil {
				rows.Close()
				return nil, translate(err, "read spans")
			}
			out = append(out, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err, "read spans")
		}
	}
	return out, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
