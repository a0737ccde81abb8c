package otel

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MaxAttributeBytes caps one string attribute value of a received span;
// a longer value is cut there (at a rune boundary) and marked with
// TruncatedMark.
const MaxAttributeBytes = 256 << 10

// TruncatedMark ends a string attribute value that MaxAttributeBytes cut.
const TruncatedMark = "… [truncated by prism]"

// DecodeProtobuf reads an OTLP/HTTP protobuf body.
func DecodeProtobuf(body []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		return nil, fmt.Errorf("decode OTLP protobuf: %w", err)
	}
	return req, nil
}

// DecodeJSON reads an OTLP/HTTP JSON body (OTLP's JSON mapping of protobuf:
// trace and span ids are hex, not base64; enums may be integers; int64 may
// be strings; unknown fields are ignored).
func DecodeJSON(body []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("decode OTLP JSON: body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode OTLP JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode OTLP JSON: data after the request object")
	}
	if err := hexIDsToBase64(v, 0); err != nil {
		return nil, fmt.Errorf("decode OTLP JSON: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("decode OTLP JSON: %w", err)
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("decode OTLP JSON: %w", err)
	}
	return req, nil
}

// EncodeJSON writes a message in OTLP's JSON mapping (hex ids).
func EncodeJSON(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: false}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode OTLP JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("encode OTLP JSON: %w", err)
	}
	if err := convertIDs(v, 0, func(s string) (string, error) {
		raw, err := base64.StdEncoding.DecodeString(s)
		return hex.EncodeToString(raw), err
	}); err != nil {
		return nil, fmt.Errorf("encode OTLP JSON: %w", err)
	}
	return json.Marshal(v)
}

var idKeys = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true,
	"trace_id": true, "span_id": true, "parent_span_id": true}

func hexIDsToBase64(v any, depth int) error {
	return convertIDs(v, depth, func(s string) (string, error) {
		raw, err := hex.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return "", fmt.Errorf("id %q is not hex", s)
		}
		return base64.StdEncoding.EncodeToString(raw), nil
	})
}

// convertIDs rewrites every id-keyed string of a decoded JSON tree in place.
// Attribute values are never id-keyed (they sit under "value").
func convertIDs(v any, depth int, conv func(string) (string, error)) error {
	if depth > 64 {
		return fmt.Errorf("nesting deeper than 64")
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && idKeys[k] {
				c, err := conv(s)
				if err != nil {
					return err
				}
				x[k] = c
				continue
			}
			if k == "attributes" || k == "value" {
				continue
			}
			if err := convertIDs(e, depth+1, conv); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := convertIDs(e, depth+1, conv); err != nil {
				return err
			}
		}
	}
	return nil
}

// Rejection is one span a receiver refused, and why.
type Rejection struct {
	TraceID, SpanID string // hex, as received
	Reason          string
	Service         string // the service.name of the resource that sent it
}

// Spans flattens a request into its spans, each with its resource's
// service.name, refusing those CheckSpan refuses. String attribute values
// past MaxAttributeBytes are cut and marked (the request is modified).
func Spans(req *coltracepb.ExportTraceServiceRequest) ([]Span, []Rejection) {
	var out []Span
	var rejected []Rejection
	for _, rs := range req.GetResourceSpans() {
		service := attrsOf(rs.GetResource().GetAttributes()).str("service.name")
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				if why := CheckSpan(s); why != "" {
					rejected = append(rejected, Rejection{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()), Reason: why, Service: service})
					continue
				}
				capAttributes(s.Attributes)
				out = append(out, Span{Service: service, Span: s})
			}
		}
	}
	return out, rejected
}

func capAttributes(kvs []*commonpb.KeyValue) {
	for _, kv := range kvs {
		if sv, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_StringValue); ok && len(sv.StringValue) > MaxAttributeBytes {
			cut := MaxAttributeBytes
			for cut > 0 && !utf8.RuneStart(sv.StringValue[cut]) {
				cut--
			}
			sv.StringValue = sv.StringValue[:cut] + TruncatedMark
		}
	}
}
