package backend

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/core"
	"prism/sources/otel"
	"prism/store"
	"prism/web"
)

// SpanStore is what Traces stores spans in (the SQLite store implements it).
type SpanStore interface {
	ReceiveSpans(ctx context.Context, spans []store.SpanRecord, derive store.SpanDeriver) (store.SpanReceipt, error)
}

// Traces adapts a SpanStore to web.TraceReceiver: it decodes an OTLP
// request, refuses the spans otel.CheckSpan refuses (partial_success), and
// stores the rest, whose sessions the store derives with DeriveSpans.
// When Stats is set, each export's spans are counted there per sender
// (service.name): accepted once stored, rejected as partial_success names
// them.
type Traces struct {
	Store SpanStore
	Stats *SenderStats
	// Now is the clock of Stats' last-seen times (nil: time.Now).
	Now func() time.Time
}

var _ web.TraceReceiver = Traces{}

// maxRejectionReasons bounds the reasons partial_success spells out.
const maxRejectionReasons = 5

// ReceiveTraces implements web.TraceReceiver.
func (t Traces) ReceiveTraces(ctx context.Context, body []byte, isJSON bool) (*coltracepb.ExportTraceServiceResponse, error) {
	var req *coltracepb.ExportTraceServiceRequest
	var err error
	if isJSON {
		req, err = otel.DecodeJSON(body)
	} else {
		req, err = otel.DecodeProtobuf(body)
	}
	if err != nil {
		return nil, core.Errorf(core.CodeInvalid, "%w", err)
	}
	spans, rejected := otel.Spans(req)
	recs := make([]store.SpanRecord, 0, len(spans))
	for _, s := range spans {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s.Span)
		if err != nil {
			return nil, fmt.Errorf("encode span: %w", err)
		}
		recs = append(recs, store.SpanRecord{TraceID: hex.EncodeToString(s.Span.TraceId), SpanID: hex.EncodeToString(s.Span.SpanId),
			ConversationID: otel.ConversationID(s.Span), Service: s.Service, Body: b})
	}
	if len(recs) > 0 {
		if _, err := t.Store.ReceiveSpans(ctx, recs, DeriveSpans); err != nil {
			return nil, fmt.Errorf("store spans: %w", err)
		}
	}
	if t.Stats != nil {
		now := time.Now()
		if t.Now != nil {
			now = t.Now()
		}
		type counts struct{ ok, bad int }
		per := map[string]*counts{}
		get := func(svc string) *counts {
			if per[svc] == nil {
				per[svc] = &counts{}
			}
			return per[svc]
		}
		for _, s := range spans {
			get(s.Service).ok++
		}
		for _, r := range rejected {
			get(r.Service).bad++
		}
		for svc, c := range per {
			t.Stats.record(svc, c.ok, c.bad, now)
		}
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if len(rejected) > 0 {
		var reasons []string
		for i, r := range rejected {
			if i == maxRejectionReasons {
				reasons = append(reasons, fmt.Sprintf("and %d more", len(rejected)-i))
				break
			}
			reasons = append(reasons, fmt.Sprintf("span %s/%s: %s", r.TraceID, r.SpanID, r.Reason))
		}
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: int64(len(rejected)), ErrorMessage: strings.Join(reasons, "; ")}
	}
	return resp, nil
}

// DeriveSpans is the store.SpanDeriver of OpenTelemetry GenAI spans: it
// decodes the stored records and maps them with otel.Derive.
func DeriveSpans(recs []store.SpanRecord) ([]store.DerivedLog, error) {
	spans := make([]otel.Span, 0, len(recs))
	for _, r := range recs {
		s := &tracepb.Span{}
		if err := proto.Unmarshal(r.Body, s); err != nil {
			return nil, fmt.Errorf("decode stored span %s/%s: %w", r.TraceID, r.SpanID, err)
		}
		spans = append(spans, otel.Span{Service: r.Service, Span: s})
	}
	logs, err := otel.Derive(spans)
	if err != nil {
		return nil, err
	}
	out := make([]store.DerivedLog, len(logs))
	for i, l := range logs {
		out[i] = store.DerivedLog{Header: l.Header, Events: l.Events, Traces: l.Traces}
	}
	return out, nil
}
