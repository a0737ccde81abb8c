package main

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"prism/core/redact"
	"prism/sources/otel"
	"prism/views"
	"prism/web"
)

// TestOTLPBrowser: an agent instrumented with the real OpenTelemetry SDK
// (OTLP/HTTP protobuf, a synchronous span processor) sends to a prism
// whose session page is open in Chromium: the delegate call's card shows
// pending once the chat span asked for it and turns completed live when
// its span arrives, nesting the nested agent's child session (the link
// note); the child is reachable from the list under its parent, and its
// page shows its grep card and links back to its parent.
func TestOTLPBrowser(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--db", filepath.Join(t.TempDir(), "prism.db"), "--no-demo"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	deps, release, err := openBackend(t.Context(), cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if deps.Redactor, err = redact.New(cfg.RedactRules...); err != nil {
		t.Fatal(err)
	}
	deps.Logger = quietLog()
	srv := web.New(deps)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close(); release() })

	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(hs.URL+views.OTLPTracesURL()),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "browser-agent"))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("prism.browser")
	str := attribute.String

	// The agent's first inference asks for the delegate call.
	actx, agent := tr.Start(context.Background(), "invoke_agent coder", trace.WithAttributes(
		str(otel.AttrOperation, otel.OpInvokeAgent), str(otel.AttrConversationID, "conv-browser")))
	_, chat := tr.Start(actx, "chat m", trace.WithAttributes(str(otel.AttrOperation, otel.OpChat), str(otel.AttrRequestModel, "m"),
		str(otel.AttrConversationID, "conv-browser"),
		str(otel.AttrOutputMessages, `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_D","name":"delegate","arguments":{"task":"find the bug"}}]}]`)))
	chat.End()
	parent := otel.ConversationSessionID("conv-browser")

	ctx := headless(t)
	card := `[data-call-id="call_D"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+views.SessionURL(parent)),
		chromedp.WaitReady(chromedp.CSS(card+`[data-state="pending"]`))); err != nil {
		t.Fatalf("the delegate card is not pending on the parent's page: %v", err)
	}
	// The subagent runs under the delegate call; then the call ends.
	tctx, del := tr.Start(actx, "execute_tool delegate", trace.WithAttributes(
		str(otel.AttrOperation, otel.OpExecuteTool), str(otel.AttrToolName, "delegate"), str(otel.AttrToolCallID, "call_D"),
		str(otel.AttrToolArguments, `{"task":"find the bug"}`)))
	sctx, sub := tr.Start(tctx, "invoke_agent explorer", trace.WithAttributes(str(otel.AttrOperation, otel.OpInvokeAgent), str(otel.AttrAgentName, "explorer")))
	_, schat := tr.Start(sctx, "chat m", trace.WithAttributes(str(otel.AttrOperation, otel.OpChat), str(otel.AttrRequestModel, "m")))
	schat.End()
	_, grep := tr.Start(sctx, "execute_tool grep", trace.WithAttributes(
		str(otel.AttrOperation, otel.OpExecuteTool), str(otel.AttrToolName, "grep"), str(otel.AttrToolCallID, "call_G"),
		str(otel.AttrToolArguments, `{"pattern":"bug"}`), str(otel.AttrToolResult, "main.go:7: bug")))
	grep.End()
	sub.End()
	del.SetAttributes(str(otel.AttrToolResult, "the bug is in main.go:7"))
	del.End()
	agent.End()

	// Same page, no reload: the card completes through the stream.
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(card+`[data-state="ok"]`))); err != nil {
		t.Fatalf("the delegate card did not complete live: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-call-id="call_D"]').textContent`))
	if err != nil || !strings.Contains(text, "the bug is in main.go:7") {
		t.Errorf("the completed delegate card says %q (%v)", text, err)
	}
	if nav, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`)); err != nil || nav != 1 {
		t.Errorf("the page reloaded (%d navigations, %v)", nav, err)
	}
	// The delegate card nests its child (the link note): the child's grep
	// card inside, and a link that opens the child.
	nested := card + ` [data-testid="child"]`
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(nested+` [data-call-id="call_G"]`))); err != nil {
		t.Fatalf("the delegate card does not nest its child: %v", err)
	}
	childURL, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+nested+` [data-testid="child-open"]').getAttribute('href')`))
	if err != nil || !strings.HasPrefix(childURL, "/sessions/otel-") {
		t.Fatalf("the nested child's open link %q (%v)", childURL, err)
	}
	// From the list: the parent's row counts one subagent; unfolded, the
	// child's row links to it.
	kids := `[data-session-id="` + parent + `"] [data-testid="row-kids"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/"), chromedp.WaitReady(chromedp.CSS(kids))); err != nil {
		t.Fatalf("the list: %v", err)
	}
	text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+kids+`').textContent`))
	if err != nil || !strings.Contains(text, "1 subagent") {
		t.Fatalf("the parent's row says %q (%v), want 1 subagent", text, err)
	}
	row := `tr[data-parent="` + parent + `"]`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('`+kids+`').click()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(row+` td.title a[href="`+childURL+`"]`))); err != nil {
		t.Fatalf("the child's row under its parent: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('`+row+` td.title a').click()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`[data-call-id="call_G"][data-state="ok"]`)),
		chromedp.WaitReady(chromedp.CSS(`a[href="`+views.SessionURL(parent)+`"]`))); err != nil {
		t.Fatalf("the child's page (its grep card, its parent's link): %v", err)
	}
	text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-call-id="call_G"]').textContent`))
	if err != nil || !strings.Contains(text, "main.go:7: bug") {
		t.Errorf("the child's grep card says %q (%v)", text, err)
	}
}
