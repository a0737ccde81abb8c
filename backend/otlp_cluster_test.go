package backend_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/backend"
	"prism/core"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/otel"
	"prism/store"
)

// TestReceiveSpans_twoNodes: one trace's spans, in 8 requests sent at once,
// half to each of two PostgreSQL nodes, children before their parent: both
// nodes then hold exactly the log Derive gives of all the spans.
func TestReceiveSpans_twoNodes(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	var nodes []*pgstore.Store
	for range 2 {
		st, err := pgstore.Open(ctx, dsn, pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		nodes = append(nodes, st)
	}
	all, err := otel.DecodeProtobuf(spanBatch(7, 64))
	if err != nil {
		t.Fatal(err)
	}
	spans := all.ResourceSpans[0].ScopeSpans[0].Spans // the root first: send it last
	var bodies [][]byte
	for i := len(spans); i > 0; i -= 8 {
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans[max(0, i-8):i]}}}}}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(bodies))
	for i, b := range bodies {
		wg.Go(func() {
			_, errs[i] = backend.Traces{Store: nodes[i%2]}.ReceiveTraces(ctx, b, false)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var in []otel.Span
	for _, s := range spans {
		in = append(in, otel.Span{Span: s})
	}
	want, err := otel.Derive(in)
	if err != nil || len(want) != 1 {
		t.Fatalf("derive: %d sessions, %v", len(want), err)
	}
	enc := func(evs []core.Event) []byte {
		var buf bytes.Buffer
		for _, e := range evs {
			j, _ := e.MarshalJSON()
			buf.Write(j)
			buf.WriteByte('\n')
		}
		return buf.Bytes()
	}
	for i, st := range nodes {
		l, err := st.LoadSession(ctx, want[0].Header.ID)
		if err != nil {
			t.Fatal(err)
		}
		list, err := st.ListSessions(ctx, store.ListOptions{})
		if err != nil || len(list.Sessions) != 1 {
			t.Errorf("node %d lists %d sessions (%v), want the conversation's alone", i, len(list.Sessions), err)
		}
		if !bytes.Equal(enc(l.Events), enc(want[0].Events)) {
			t.Errorf("node %d holds another log than the spans derive:\n%s\nwant\n%s", i, enc(l.Events), enc(want[0].Events))
		}
	}
}
