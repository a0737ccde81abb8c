package backend

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
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
	// Logger logs a subagent link note that could not be written (nil:
	// discarded); the spans and sessions are stored by then, so the
	// request still succeeds.
	Logger *slog.Logger
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
		// The derivation's subagent links, by child session: the store's
		// last call derives every span it holds after the batch.
		var links map[string]otel.Link
		derive := func(recs []store.SpanRecord) ([]store.DerivedLog, error) {
			out, l, err := deriveSpans(recs)
			links = l
			return out, err
		}
		receipt, err := t.Store.ReceiveSpans(ctx, recs, derive)
		if err != nil {
			return nil, fmt.Errorf("store spans: %w", err)
		}
		if ln, ok := t.Store.(LinkNotes); ok {
			if err := writeLinks(ctx, ln, receipt, links); err != nil && t.Logger != nil {
				t.Logger.WarnContext(ctx, "otlp: a subagent's link note was not written", logkey.Err, err)
			}
		}
	}
	if t.Stats != nil {
		now := time.Now()
		if t.Now != nil {
			now = t.Now()
		}
		type counts struct {
			ok, bad int
			why     string
		}
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
			c := get(r.Service)
			c.bad++
			c.why = r.Reason
		}
		for svc, c := range per {
			t.Stats.record(svc, c.ok, c.bad, c.why, now)
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

// LinkNotes is what Traces writes subagent links through, when its
// SpanStore offers it (both stores do): the parent session's "link" note
// on the call that spawned a subagent's session.
type LinkNotes interface {
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
	RemoveNote(ctx context.Context, session, id string) (notes.Note, error)
}

// writeLinks gives each subagent session the batch created or changed a
// "link" note on its parent's spawning call (notes.KindLink, callId the
// call, atSeq its tool/call): written once, moved when a rebuild moved
// the call.
func writeLinks(ctx context.Context, ln LinkNotes, receipt store.SpanReceipt, links map[string]otel.Link) error {
	changed := map[string]bool{}
	for _, r := range receipt.Sessions {
		changed[r.SessionID] = true
	}
	children := make([]string, 0, len(links))
	for child, l := range links {
		if changed[child] || changed[l.Parent] {
			children = append(children, child)
		}
	}
	sort.Strings(children)
	for _, child := range children {
		l := links[child]
		r := store.ImportResult{SessionID: child}
		have, err := ln.Notes(ctx, l.Parent, notes.Query{Kind: notes.KindLink})
		if err != nil {
			return fmt.Errorf("read link notes of %s: %w", l.Parent, err)
		}
		done := false
		for _, n := range have {
			d, err := notes.ParseLink(n.Data)
			if err != nil || d.Child != r.SessionID {
				continue
			}
			if n.CallID == l.CallID && n.AtSeq == l.AtSeq && !done {
				done = true
				continue
			}
			if _, err := ln.RemoveNote(ctx, l.Parent, n.ID); err != nil {
				return fmt.Errorf("move link note of %s: %w", r.SessionID, err)
			}
		}
		if done {
			continue
		}
		// A span's parent is a record: the link is not inferred.
		in, err := notes.Link(l.Parent, l.CallID, l.AtSeq, notes.LinkData{Child: r.SessionID})
		if err != nil {
			return fmt.Errorf("link note of %s: %w", r.SessionID, err)
		}
		if _, err := ln.PutNote(ctx, in); err != nil {
			return fmt.Errorf("write link note of %s: %w", r.SessionID, err)
		}
	}
	return nil
}

// DeriveSpans is the store.SpanDeriver of OpenTelemetry GenAI spans: it
// decodes the stored records and maps them with otel.Derive.
func DeriveSpans(recs []store.SpanRecord) ([]store.DerivedLog, error) {
	out, _, err := deriveSpans(recs)
	return out, err
}

// deriveSpans is DeriveSpans that also returns the subagents' links, by
// child session id.
func deriveSpans(recs []store.SpanRecord) ([]store.DerivedLog, map[string]otel.Link, error) {
	spans := make([]otel.Span, 0, len(recs))
	for _, r := range recs {
		s := &tracepb.Span{}
		if err := proto.Unmarshal(r.Body, s); err != nil {
			return nil, nil, fmt.Errorf("decode stored span %s/%s: %w", r.TraceID, r.SpanID, err)
		}
		spans = append(spans, otel.Span{Service: r.Service, Span: s})
	}
	logs, err := otel.Derive(spans)
	if err != nil {
		return nil, nil, err
	}
	out := make([]store.DerivedLog, len(logs))
	links := map[string]otel.Link{}
	for i, l := range logs {
		out[i] = store.DerivedLog{Header: l.Header, Events: l.Events, Traces: l.Traces}
		if l.Link != nil {
			links[l.Header.ID] = *l.Link
		}
	}
	return out, links, nil
}
