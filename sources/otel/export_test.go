package otel_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"prism/core"
	"prism/core/agent/agenttest"
	"prism/sources/otel"
)

// usages lists the usage of every assistant message of a log.
func usages(t *testing.T, evs []core.Event) []core.TokenUsage {
	t.Helper()
	var out []core.TokenUsage
	for _, e := range evs {
		if e.Type != core.EventAssistantMessage {
			continue
		}
		var d core.AssistantMessage
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Usage != nil {
			out = append(out, *d.Usage)
		}
	}
	return out
}

// TestExport_roundTrip: a session exported as spans (written as OTLP/JSON
// and read back) derives the same calls — ids, names, arguments, results,
// errors — and usage, under the same session id; exporting again gives the
// same bytes.
func TestExport_roundTrip(t *testing.T) {
	orig := derive(t, batch(t))[0]
	req, err := otel.Export(orig.Header, orig.Events)
	if err != nil {
		t.Fatal(err)
	}
	js, err := otel.EncodeJSON(req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := otel.Export(orig.Header, orig.Events)
	if err != nil {
		t.Fatal(err)
	}
	if js2, _ := otel.EncodeJSON(again); !bytes.Equal(js, js2) {
		t.Error("exporting twice gives other spans")
	}
	back, err := otel.DecodeJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	spans, rejected := otel.Spans(back)
	if len(rejected) != 0 {
		t.Fatalf("rejected %v", rejected)
	}
	logs := derive(t, spans)
	if len(logs) != 1 || logs[0].Header.ID != orig.Header.ID {
		t.Fatalf("sessions %d, id %q want %q", len(logs), logs[0].Header.ID, orig.Header.ID)
	}
	want, got := cards(t, orig.Events), cards(t, logs[0].Events)
	if len(got) != len(want) || len(want) != 2 {
		t.Fatalf("calls %d, want %d", len(got), len(want))
	}
	for id, w := range want {
		if g := got[id]; g == nil || *g != *w {
			t.Errorf("call %s: %+v, want %+v", id, g, w)
		}
	}
	wu, gu := usages(t, orig.Events), usages(t, logs[0].Events)
	if len(wu) != 1 || len(gu) != 1 || wu[0] != gu[0] {
		t.Errorf("usage %v, want %v", gu, wu)
	}
	if types(logs[0].Events) != types(orig.Events) {
		t.Errorf("events\n got %s\nwant %s", types(logs[0].Events), types(orig.Events))
	}
}

// TestExport_demoRoundTrip: prism's scripted demo (every card kind and
// failure class, from the real loop) exported and derived again gives
// the same calls: ids, names, arguments, result texts and error flags.
func TestExport_demoRoundTrip(t *testing.T) {
	h, evs := agenttest.DemoLog(t, 1_800_000_000_000)
	req, err := otel.Export(h, evs)
	if err != nil {
		t.Fatal(err)
	}
	spans, rejected := otel.Spans(req)
	if len(rejected) != 0 {
		t.Fatalf("rejected %v", rejected)
	}
	logs := derive(t, spans)
	if len(logs) != 1 {
		t.Fatalf("%d sessions", len(logs))
	}
	want, got := cards(t, evs), cards(t, logs[0].Events)
	if len(want) < 5 || len(got) != len(want) {
		t.Fatalf("calls %d, want %d", len(got), len(want))
	}
	errs := 0
	for id, w := range want {
		if w.isError {
			errs++
		}
		if g := got[id]; g == nil || *g != *w {
			t.Errorf("call %s: %+v, want %+v", id, g, w)
		}
	}
	if errs == 0 {
		t.Error("the demo has no failed call to carry")
	}
}
