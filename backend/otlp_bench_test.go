package backend_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/db"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/dsh"
	"prism/sources/otel"
	"prism/store"
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

// spanEngine is a store both benchmarks write into: spans and imports.
type spanEngine interface {
	backend.SpanStore
	ImportWith(ctx context.Context, name string, r io.Reader, size int64, o store.ImportOptions) ([]store.ImportResult, error)
}

var spanEngines = []struct {
	name string
	open func(b *testing.B) spanEngine
}{
	{"sqlite", func(b *testing.B) spanEngine {
		st, err := db.Open(context.Background(), filepath.Join(b.TempDir(), "prism.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(b *testing.B) spanEngine {
		st, err := pgstore.Open(context.Background(), pgtest.DB(b), pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
}

// dshLog is a dsh session.jsonl of n events: a turn's start, a step's,
// then tool calls and their results (what the spans of spanBatch become).
func dshLog(b *testing.B, n int) []byte {
	bl := coretest.NewBuilder(1_800_000_000_000)
	bl.TurnStart()
	if n > 1 {
		bl.StepStart()
	}
	for i := 0; len(bl.Events) < n; i++ {
		id := fmt.Sprintf("c%d", i/2)
		if i%2 == 0 {
			bl.Call(id, "read", `{"path":"a.go"}`)
		} else {
			bl.Result(id, "package a", false, nil, nil)
		}
	}
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, core.SessionHeader{Version: core.SessionFormatVersion, ID: "dsh-bench", CreatedAt: 1_800_000_000_000}, bl.Events); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReceiveSpans: OTLP protobuf requests of 1, 64 and 512 spans
// (each a new trace) through the receiver into each engine, spans/s;
// beside each, in the same run, the import of a dsh session.jsonl of as
// many events (each a new session), events/s.
func BenchmarkReceiveSpans(b *testing.B) {
	ctx := context.Background()
	for _, e := range spanEngines {
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
			b.Run(fmt.Sprintf("%s/dsh-import/events=%d", e.name, n), func(b *testing.B) {
				st := e.open(b)
				body := dshLog(b, n)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := st.ImportWith(ctx, "session.jsonl", bytes.NewReader(body), int64(len(body)), store.ImportOptions{As: fmt.Sprintf("dsh-%d", i)}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkReceive10kSpans: one OTLP protobuf request of 10,000 spans (one
// trace: an invoke_agent and 9,999 chat and execute_tool spans) through
// the receiver into a fresh SQLite store. Reports the peak of the heap's
// live objects above what it held before (sampled every 200 µs, so a lower
// bound) and the bytes allocated, per request, in MB.
func BenchmarkReceive10kSpans(b *testing.B) {
	ctx := context.Background()
	body := spanBatch(0, 10000)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	var peak, alloc float64
	for b.Loop() {
		b.StopTimer()
		r := backend.Traces{Store: spanEngines[0].open(b)}
		runtime.GC()
		base := heap()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		allocBefore := ms.TotalAlloc
		stop := make(chan struct{})
		top := make(chan uint64)
		go func() {
			m := base
			tick := time.NewTicker(200 * time.Microsecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					top <- max(m, heap())
					return
				case <-tick.C:
					m = max(m, heap())
				}
			}
		}()
		b.StartTimer()
		resp, err := r.ReceiveTraces(ctx, body, false)
		b.StopTimer()
		close(stop)
		m := <-top
		if err != nil || resp.GetPartialSuccess().GetRejectedSpans() != 0 {
			b.Fatal(resp, err)
		}
		runtime.ReadMemStats(&ms)
		peak = max(peak, float64(m-base)/(1<<20))
		alloc += float64(ms.TotalAlloc-allocBefore) / (1 << 20)
		b.StartTimer()
	}
	b.ReportMetric(peak, "peak-heap-MB")
	b.ReportMetric(alloc/float64(b.N), "alloc-MB/op")
	b.ReportMetric(float64(len(body))/(1<<20), "body-MB")
}
