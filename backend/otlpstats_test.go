package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/backend"
	"prism/db"
)

// TestSenderStats: spans received through Traces are counted per
// service.name, rejected ones apart, with the last time each sender sent.
func TestSenderStats(t *testing.T) {
	ctx := context.Background()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	batch, err := os.ReadFile("../sources/otel/testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	stats := &backend.SenderStats{}
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	tr := backend.Traces{Store: st, Stats: stats, Now: func() time.Time { return now }}
	resp, err := tr.ReceiveTraces(ctx, batch, true)
	if err != nil || resp.GetPartialSuccess().GetRejectedSpans() != 0 {
		t.Fatalf("receive: %v %v", resp, err)
	}
	snap := stats.Snapshot()
	if len(snap) != 1 || snap[0].Received == 0 || snap[0].Rejected != 0 || !snap[0].LastSeen.Equal(now) {
		t.Fatalf("after one batch: %+v", snap)
	}
	service, received := snap[0].Service, snap[0].Received
	if service == "" {
		t.Fatalf("the batch's service.name was not read: %+v", snap)
	}
	// A batch of another sender: one good span, one with zero times.
	other := []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"other-agent"}}]},
		"scopeSpans":[{"spans":[
		{"traceId":"5b8efff798038103d269b633813fc60d","spanId":"00000000000000ab","name":"chat m","startTimeUnixNano":"1764500000000000000","endTimeUnixNano":"1764500001000000000"},
		{"traceId":"5b8efff798038103d269b633813fc60d","spanId":"00000000000000aa","name":"x"}]}]}]}`)
	now = now.Add(time.Minute)
	if _, err := tr.ReceiveTraces(ctx, other, true); err != nil {
		t.Fatal(err)
	}
	snap = stats.Snapshot()
	if len(snap) != 2 {
		t.Fatalf("want two senders: %+v", snap)
	}
	if s := snap[0]; s.Service != "other-agent" || s.Received != 1 || s.Rejected != 1 || !s.LastSeen.Equal(now) || !strings.Contains(s.LastRejection, "times") {
		t.Fatalf("the newest sender first, 1 received and 1 rejected with its reason: %+v", s)
	}
	if s := snap[1]; s.Service != service || s.Received != received || !s.LastSeen.Equal(now.Add(-time.Minute)) {
		t.Fatalf("the first sender unchanged: %+v", s)
	}
	// The source-health rows: one per sender, kind otlp.
	rows := stats.SourceHealth()
	if len(rows) != 2 || rows[0].Kind != "otlp" || !strings.Contains(rows[0].Feed, "other-agent · 1 spans received") ||
		rows[0].Skipped != 1 || rows[0].SkippedWhy == "" || !rows[0].LastRead.Equal(now) {
		t.Fatalf("source-health rows %+v", rows)
	}
}
