package otel_test

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"prism/sources/otel"
)

// FuzzDerive feeds OTLP/JSON bodies through the decoder and the mapper:
// nothing panics, every derived log is valid (derive checks core.ValidateLog
// and core.CheckRelations), and the reversed order of the same spans gives
// the same logs.
func FuzzDerive(f *testing.F) {
	body, err := os.ReadFile("testdata/batch.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01010101010101010101010101010101","spanId":"0202020202020202","parentSpanId":"0202020202020202","name":"execute_tool x","startTimeUnixNano":"5","endTimeUnixNano":"9"}]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := otel.DecodeJSON(body)
		if err != nil {
			return
		}
		spans, _ := otel.Spans(req)
		logs := derive(t, spans)
		rev := slices.Clone(spans)
		slices.Reverse(rev)
		again := derive(t, rev)
		if len(again) != len(logs) {
			t.Fatalf("%d sessions, reversed %d", len(logs), len(again))
		}
		for i := range logs {
			if !bytes.Equal(encode(t, logs[i].Events), encode(t, again[i].Events)) || logs[i].Header != again[i].Header {
				t.Fatalf("session %s differs when reversed", logs[i].Header.ID)
			}
		}
	})
}
