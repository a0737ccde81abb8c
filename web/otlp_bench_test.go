package web_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"prism/sources/otel"
	"prism/views"
)

// BenchmarkOTLPReceiveToCard: an agent instrumented with the real SDK (a
// synchronous span processor: each span is one OTLP/HTTP protobuf POST)
// runs steps of one chat span asking for a call and the call's
// execute_tool span; a page's stream of the session is open. Reports, per
// call, the time from the tool span's End (its POST begins) to the stream
// delivering the call's completed card (data-state="ok"): p50/p99 in ms.
// Each op is 100 steps of a fresh session.
func BenchmarkOTLPReceiveToCard(b *testing.B) {
	const steps = 100
	var lat []time.Duration
	run := 0
	for b.Loop() {
		run++
		e := otlpEnv(b)
		tr, _, _ := sdk(b, e)
		conv := fmt.Sprintf("bench-card-%d", run)
		id := otel.ConversationSessionID(conv)
		ctx, agent := tr.Start(context.Background(), "invoke_agent bench", trace.WithAttributes(
			attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrConversationID, conv)))
		step := func(i int) (end func()) {
			call := fmt.Sprintf("c%d", i)
			_, chat := tr.Start(ctx, "chat m", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpChat),
				attribute.String(otel.AttrRequestModel, "m"), attribute.String(otel.AttrConversationID, conv),
				attribute.String(otel.AttrOutputMessages, `[{"role":"assistant","parts":[{"type":"tool_call","id":"`+call+`","name":"read","arguments":{"path":"a.go"}}]}]`)))
			chat.End()
			_, tool := tr.Start(ctx, "execute_tool read", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpExecuteTool),
				attribute.String(otel.AttrToolName, "read"), attribute.String(otel.AttrToolCallID, call),
				attribute.String(otel.AttrToolResult, "package a\n")))
			return func() { tool.End() }
		}
		step(0)() // the session exists
		info, err := e.store.Session(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		s := e.stream(b, views.SessionStreamURL(id, info.LastSeq))
		for i := 1; i <= steps; i++ {
			end := step(i)
			want := fmt.Sprintf(`data-call-id="c%d" data-state="ok"`, i)
			start := time.Now()
			end()
			s.until(b, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), want) })
			lat = append(lat, time.Since(start))
		}
		agent.End()
	}
	slices.Sort(lat)
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
}
