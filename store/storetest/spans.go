package storetest

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"prism/core"
	"prism/core/share"
	"prism/store"
)

// deriveBySpan is a store.SpanDeriver for the contract: a session per
// conversation id (else per trace), "otel-" + that key, holding one turn
// whose user messages are the spans' bodies in trace and span id order.
func deriveBySpan(recs []store.SpanRecord) ([]store.DerivedLog, error) {
	recs = append([]store.SpanRecord(nil), recs...)
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].TraceID != recs[j].TraceID {
			return recs[i].TraceID < recs[j].TraceID
		}
		return recs[i].SpanID < recs[j].SpanID
	})
	// A trace's conversation: the first one any of its spans names.
	conv := map[string]string{}
	for _, r := range recs {
		if r.ConversationID != "" && conv[r.TraceID] == "" {
			conv[r.TraceID] = r.ConversationID
		}
	}
	byID := map[string][]store.SpanRecord{}
	tracesOf := map[string]map[string]bool{}
	for _, r := range recs {
		key := conv[r.TraceID]
		if key == "" {
			key = r.TraceID
		}
		byID["otel-"+key] = append(byID["otel-"+key], r)
		if tracesOf["otel-"+key] == nil {
			tracesOf["otel-"+key] = map[string]bool{}
		}
		tracesOf["otel-"+key][r.TraceID] = true
	}
	var out []store.DerivedLog
	for id, rs := range byID {
		l := store.DerivedLog{Header: core.SessionHeader{ID: id, CreatedAt: 1}}
		for tr := range tracesOf[id] {
			l.Traces = append(l.Traces, tr)
		}
		sort.Strings(l.Traces)
		add := func(typ string, data any, surface bool) {
			raw, _ := json.Marshal(data)
			e := core.Event{Type: typ, Seq: int64(len(l.Events)), Time: 1, Data: raw}
			if surface {
				e.SurfaceOp = core.AppendOp()
			}
			l.Events = append(l.Events, e)
		}
		add(core.EventTurnStart, core.TurnStart{Turn: 1}, false)
		for _, r := range rs {
			add(core.EventUserMessage, core.NewUserMessage(r.TraceID+r.SpanID, string(r.Body)), true)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Header.ID < out[j].Header.ID })
	return out, nil
}

func span(trace, id, conv, body string) store.SpanRecord {
	return store.SpanRecord{TraceID: strings.Repeat(trace, 32), SpanID: strings.Repeat(id, 16), ConversationID: conv, Service: "svc", Body: []byte(body)}
}

// testReceiveSpans: spans are stored once by trace and span id (a retried
// batch changes nothing); a session is derived from every stored span of
// its traces: created, extended, replaced when a late span changes what
// came before, its share links kept; a trace's session gives way to its conversation's once a
// span names the conversation, and a trace sharing the conversation joins it.
func testReceiveSpans(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	derives := 0
	recv := func(spans ...store.SpanRecord) store.SpanReceipt {
		t.Helper()
		derives = 0
		r, err := st.ReceiveSpans(ctx, spans, func(recs []store.SpanRecord) ([]store.DerivedLog, error) {
			derives++
			return deriveBySpan(recs)
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	texts := func(id string) string {
		t.Helper()
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range l.Events[1:] {
			var m core.Message
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m.Content.PlainText())
		}
		return strings.Join(out, " ")
	}
	traceA := "otel-" + strings.Repeat("a", 32)
	r := recv(span("a", "2", "", "tool"))
	if r.Added != 1 || len(r.Sessions) != 1 || r.Sessions[0].SessionID != traceA || r.Sessions[0].Outcome != store.ImportCreated {
		t.Fatalf("first span: %+v", r)
	}
	commits := e.Commits(st)
	if r := recv(span("a", "2", "", "tool")); r.Added != 0 || len(r.Sessions) != 0 {
		t.Fatalf("a retry: %+v", r)
	}
	if e.Commits(st) > commits+1 {
		t.Errorf("a retry wrote more than its own transaction")
	}
	if got := e.Count(t, st, "SELECT count(*) FROM otel_spans"); got != 1 {
		t.Fatalf("%d spans stored, want 1", got)
	}
	// A span naming the conversation: the trace's session gives way.
	r = recv(span("a", "1", "c1", "chat"))
	if len(r.Sessions) != 1 || r.Sessions[0].SessionID != "otel-c1" || r.Sessions[0].Outcome != store.ImportCreated ||
		len(r.Removed) != 1 || r.Removed[0] != traceA {
		t.Fatalf("conversation span: %+v", r)
	}
	if derives != 1 {
		t.Errorf("the batch derived its sessions %d times, want once", derives)
	}
	if _, err := st.Session(ctx, traceA); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("the trace's session is still there: %v", err)
	}
	if got := texts("otel-c1"); got != "chat tool" {
		t.Errorf("otel-c1: %q", got)
	}
	// A later span extends; an earlier one replaces.
	if r = recv(span("a", "3", "", "agent")); len(r.Sessions) != 1 || r.Sessions[0].Outcome != store.ImportExtended || r.Sessions[0].Added != 1 {
		t.Fatalf("later span: %+v", r)
	}
	link, _, err := st.CreateShare(ctx, share.Spec{SessionID: "otel-c1"})
	if err != nil {
		t.Fatal(err)
	}
	if r = recv(span("a", "0", "", "root")); len(r.Sessions) != 1 || r.Sessions[0].Outcome != store.ImportReplaced {
		t.Fatalf("earlier span: %+v", r)
	}
	if got, err := st.Share(ctx, link.ID); err != nil || got.RevokedAt != 0 {
		t.Errorf("a rebuild revoked the session's share link: %+v %v", got, err)
	}
	// Another trace of the same conversation joins its session, in a batch
	// with a retried span.
	recv(span("b", "1", "c1", "next"), span("a", "3", "", "agent"))
	if got := texts("otel-c1"); got != "root chat tool agent next" {
		t.Errorf("otel-c1: %q", got)
	}
	if derives != 1 {
		t.Errorf("the batch derived its sessions %d times, want once", derives)
	}
	info, err := st.Session(ctx, "otel-c1")
	if err != nil || info.Source != store.SourceOTel {
		t.Errorf("session row %+v %v, want source otel", info, err)
	}
	// A watched file of the same id never replaces a session derived from
	// spans.
	if _, _, err := st.SyncLog(ctx, core.SessionHeader{ID: "otel-c1", CreatedAt: 1}, TurnEvents(0, 1, true), store.SourceWatch, true); core.ErrorCode(err) != core.CodeConflict {
		t.Errorf("a watched file over a session derived from spans: %v, want a conflict", err)
	}
	if got := texts("otel-c1"); got != "root chat tool agent next" {
		t.Errorf("otel-c1 after the watched file: %q", got)
	}
}
