package backend_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/db"
	"prism/sources/otel"
	"prism/store"
)

// TestPusher: a committed turn reaches an OTLP/HTTP collector (an httptest
// server decoding the SDK client's protobuf) as that turn's GenAI spans,
// its call with id, arguments and result.
func TestPusher(t *testing.T) {
	got := make(chan *coltracepb.ExportTraceServiceRequest, 4)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		got <- req
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	defer collector.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := &backend.Feed{}
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{Committed: feed.Publish})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := backend.NewPusher(collector.URL+"/v1/traces", backend.Source{Store: st}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	feed.OnCommit(p.Observe)
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	b := coretest.NewBuilder(1_800_000_000_000).TurnStart().User("read a").StepStart().
		Assistant("", [3]string{"c1", "read", `{"path":"a"}`}).Call("c1", "read", `{"path":"a"}`).
		Result("c1", "contents of a", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	h := core.SessionHeader{ID: "pushed", CreatedAt: 1_800_000_000_000}
	if _, _, err := st.SyncLog(ctx, h, b.Events, store.SourceImport, false); err != nil {
		t.Fatal(err)
	}
	var req *coltracepb.ExportTraceServiceRequest
	select {
	case req = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the collector received nothing")
	}
	spans, rejected := otel.Spans(req)
	if len(rejected) != 0 || len(spans) != 3 {
		t.Fatalf("%d spans (want agent, chat, tool), rejected %v", len(spans), rejected)
	}
	found := false
	for _, s := range spans {
		if string(s.Span.TraceId) != string(otel.TurnTraceID("pushed", 1)) {
			t.Errorf("span %s of another trace", s.Span.Name)
		}
		a := map[string]string{}
		for _, kv := range s.Span.Attributes {
			a[kv.Key] = kv.Value.GetStringValue()
		}
		if s.Span.Name == "execute_tool read" {
			found = a[otel.AttrToolCallID] == "c1" && a[otel.AttrToolArguments] == `{"path":"a"}` && a[otel.AttrToolResult] == "contents of a"
		}
	}
	if !found {
		t.Errorf("no execute_tool span with the call: %v", spans)
	}
}
