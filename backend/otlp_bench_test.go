package backend_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/backend"
	"prism/db"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/otel"
)

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// spanBatch is one request of n spans, one new trace per request: an
// invoke_agent, then chat and execute_tool spans in turns.
func spanBatch(seq, n int) []byte {
	trace := make([]byte, 16)
	binary.BigEndian.PutUint64(trace[8:], uint64(seq+1))
	id := func(i int) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, uint64(i+1))
		return b
	}
	t0 := uint64(1_800_000_000_000_000_000) + uint64(seq)*1e12
	root := &tracepb.Span{TraceId: trace, SpanId: id(0), Name: "invoke_agent a", StartTimeUnixNano: t0, EndTimeUnixNano: t0 + 1e11,
		Attributes: []*commonpb.KeyValue{strAttr(otel.AttrOperation, otel.OpInvokeAgent), strAttr(otel.AttrConversationID, fmt.Sprintf("bench-%d", seq))}}
	spans := []*tracepb.Span{root}
	for i := 1; i < n; i++ {
		s := &tracepb.Span{TraceId: trace, SpanId: id(i), ParentSpanId: root.SpanId, StartTimeUnixNano: t0 + uint64(i)*1e6, EndTimeUnixNano: t0 + uint64(i)*1e6 + 5e5}
		if i%2 == 1 {
			s.Name, s.Attributes = "chat m", []*commonpb.KeyValue{strAttr(otel.AttrOperation, otel.OpChat), strAttr(otel.AttrRequestModel, "m")}
		} else {
			s.Name, s.Attributes = "execute_tool read", []*commonpb.KeyValue{strAttr(otel.AttrOperation, otel.OpExecuteTool), strAttr(otel.AttrToolName, "read"),
				strAttr(otel.AttrToolCallID, fmt.Sprintf("c%d", i)), strAttr(otel.AttrToolArguments, `{"path":"a.go"}`), strAttr(otel.AttrToolResult, "package a")}
		}
		spans = append(spans, s)
	}
	if n == 1 {
		spans = spans[:1]
	}
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkReceiveSpans: OTLP protobuf requests of 1, 64 and 512 spans
// (each a new trace) through the receiver into each engine; spans/s.
func BenchmarkReceiveSpans(b *testing.B) {
	ctx := context.Background()
	engines := []struct {
		name string
		open func(b *testing.B) backend.SpanStore
	}{
		{"sqlite", func(b *testing.B) backend.SpanStore {
			st, err := db.Open(ctx, filepath.Join(b.TempDir(), "prism.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(b *testing.B) backend.SpanStore {
			st, err := pgstore.Open(ctx, pgtest.DB(b), pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
	for _, e := range engines {
		for _, n := range []int{1, 64, 512} {
			b.Run(fmt.Sprintf("%s/batch=%d", e.name, n), func(b *testing.B) {
				r := backend.Traces{Store: e.open(b)}
				bodies := make([][]byte, b.N)
				for i := range bodies {
					bodies[i] = spanBatch(i, n)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := r.ReceiveTraces(ctx, bodies[i], false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "spans/s")
			})
		}
	}
}
