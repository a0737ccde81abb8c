package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"prism/backend"
	"prism/core"
	"prism/core/notes"
	"prism/sources/otel"
	"prism/store"
	"prism/views"
	"prism/web"
	"prism/web/ownerauth"
)

// otlpEnv is a server whose trace receiver stores into its SQLite store;
// more may adjust its Deps.
func otlpEnv(t testing.TB, more ...func(*web.Deps)) *env {
	t.Helper()
	var e *env
	e = newEnv(t, func(d *web.Deps) {
		d.Traces = backend.Traces{Store: lazySpans{&e}}
		for _, f := range more {
			f(d)
		}
	})
	return e
}

// lazySpans reaches the env's store once newEnv made it.
type lazySpans struct{ e **env }

func (l lazySpans) ReceiveSpans(ctx context.Context, spans []store.SpanRecord, derive store.SpanDeriver) (store.SpanReceipt, error) {
	return (*l.e).store.ReceiveSpans(ctx, spans, derive)
}

func (l lazySpans) Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error) {
	return (*l.e).store.Notes(ctx, session, q)
}

func (l lazySpans) PutNote(ctx context.Context, in notes.Input) (notes.Note, error) {
	return (*l.e).store.PutNote(ctx, in)
}

func (l lazySpans) RemoveNote(ctx context.Context, session, id string) (notes.Note, error) {
	return (*l.e).store.RemoveNote(ctx, session, id)
}

// sdk is a tracer provider of the real OpenTelemetry SDK exporting each span
// as it ends (a synchronous processor) with the OTLP/HTTP protobuf exporter
// to the env's /v1/traces; rec records what was exported.
func sdk(t testing.TB, e *env, opts ...otlptracehttp.Option) (trace.Tracer, sdktrace.SpanExporter, *tracetest.SpanRecorder) {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), append([]otlptracehttp.Option{otlptracehttp.WithEndpointURL(e.base() + views.OTLPTracesURL()),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)), sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "sdk-agent"))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("prism.test"), exp, rec
}

// otlpCards renders a session page and returns its cards by call id.
func otlpCards(t *testing.T, e *env, id string) map[string]string {
	t.Helper()
	res, body := e.get(t, views.SessionURL(id))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET session %s: %d %s", id, res.StatusCode, body)
	}
	out := map[string]string{}
	for _, c := range cards(body) {
		_, rest, ok := strings.Cut(c, `data-call-id="`)
		if ok {
			id, _, _ := strings.Cut(rest, `"`)
			out[id] = c
		}
	}
	return out
}

// TestOTLP_sdkSession: an agent instrumented with the real SDK sends
// invoke_agent → chat → execute_tool spans, each in its own request as it
// ends (children first). The chat span shows its call pending; the tool
// span completes it with its arguments and result; the agent span ends the
// turn; all in one session. Exporting the same spans again (a retry)
// changes nothing.
func TestOTLP_sdkSession(t *testing.T) {
	e := otlpEnv(t)
	tr, exp, rec := sdk(t, e)
	ctx := context.Background()
	ctx, agent := tr.Start(ctx, "invoke_agent coder", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrConversationID, "conv-sdk")))
	_, chat := tr.Start(ctx, "chat deepseek-chat", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpChat), attribute.String(otel.AttrConversationID, "conv-sdk"),
		attribute.String(otel.AttrRequestModel, "deepseek-chat"), attribute.Int(otel.AttrInputTokens, 1200), attribute.Int(otel.AttrOutputTokens, 80),
		attribute.String(otel.AttrOutputMessages, `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_R","name":"read_file","arguments":{"path":"go.mod"}},{"type":"tool_call","id":"call_B","name":"bash","arguments":{"command":"make"}}]}]`)))
	chat.End()
	id := otel.ConversationSessionID("conv-sdk")
	got := otlpCards(t, e, id)
	if c := got["call_R"]; !strings.Contains(c, `data-state="pending"`) || !strings.Contains(c, "read_file") || !strings.Contains(c, "go.mod") {
		t.Fatalf("after the chat span, call_R's card is not pending with its arguments:\n%s", c)
	}
	_, tool := tr.Start(ctx, "execute_tool read_file", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpExecuteTool), attribute.String(otel.AttrToolName, "read_file"),
		attribute.String(otel.AttrToolCallID, "call_R"), attribute.String(otel.AttrToolArguments, `{"path":"go.mod"}`),
		attribute.String(otel.AttrToolResult, "module example.com/sdkagent")))
	tool.End()
	_, fail := tr.Start(ctx, "gen_ai.execute_tool bash", trace.WithAttributes(
		attribute.String(otel.AttrToolName, "bash"), attribute.String(otel.AttrToolCallID, "call_B"), attribute.String(otel.AttrErrorType, "exit_status_2")))
	fail.SetStatus(codes.Error, "make: *** no rule")
	fail.End()
	agent.End()

	got = otlpCards(t, e, id)
	if c := got["call_R"]; !strings.Contains(c, `data-state="ok"`) || !strings.Contains(c, "module example.com/sdkagent") || !strings.Contains(c, "read_file") {
		t.Errorf("call_R's card is not completed with its result:\n%s", c)
	}
	if c := got["call_B"]; !strings.Contains(c, `data-state="error"`) || !strings.Contains(c, "make: *** no rule") {
		t.Errorf("call_B's card is not an error with the status message:\n%s", c)
	}
	list, err := e.store.ListSessions(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].ID != id || list.Sessions[0].Status == core.StatusRunning {
		t.Fatalf("sessions %+v, want one ended session %s", list.Sessions, id)
	}
	before, err := e.store.LoadSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The retry: the same four spans in one request.
	if err := exp.ExportSpans(ctx, rec.Ended()); err != nil {
		t.Fatal(err)
	}
	after, err := e.store.LoadSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !sameLog(t, before.Events, after.Events) || len(after.Events) != 9 {
		t.Fatalf("the retried batch changed the log (%d → %d events)", len(before.Events), len(after.Events))
	}
}

func sameLog(t *testing.T, a, b []core.Event) bool {
	t.Helper()
	enc := func(evs []core.Event) []byte {
		var buf bytes.Buffer
		for _, e := range evs {
			j, err := e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(j)
		}
		return buf.Bytes()
	}
	return bytes.Equal(enc(a), enc(b))
}

// TestOTLP_toolFirstJoinsConversation: a tool span arrives alone, before
// anything naming its conversation: it makes its trace's session; when the
// chat and agent spans arrive, the call moves into the conversation's
// session and the trace's session is gone.
func TestOTLP_toolFirstJoinsConversation(t *testing.T) {
	e := otlpEnv(t)
	tr, _, _ := sdk(t, e)
	ctx, agent := tr.Start(context.Background(), "invoke_agent coder", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrConversationID, "conv-late")))
	_, tool := tr.Start(ctx, "execute_tool glob", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpExecuteTool),
		attribute.String(otel.AttrToolName, "glob"), attribute.String(otel.AttrToolCallID, "call_G"), attribute.String(otel.AttrToolResult, "a.go")))
	tool.End()
	traceSession := otel.IDPrefix + agent.SpanContext().TraceID().String()
	if c := otlpCards(t, e, traceSession)["call_G"]; !strings.Contains(c, "a.go") {
		t.Fatalf("the lone tool span's card:\n%s", c)
	}
	agent.End()
	if c := otlpCards(t, e, otel.ConversationSessionID("conv-late"))["call_G"]; !strings.Contains(c, "a.go") {
		t.Fatalf("the call is not in the conversation's session:\n%s", c)
	}
	if res, _ := e.get(t, views.SessionURL(traceSession)); res.StatusCode != http.StatusNotFound {
		t.Fatalf("the trace's session is still there: %d", res.StatusCode)
	}
}

func postOTLP(t *testing.T, e *env, contentType string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base()+views.OTLPTracesURL(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	return res, buf.Bytes()
}

// TestOTLP_answers: the receiver answers as OTLP/HTTP says — JSON (gzip
// too) with an ExportTraceServiceResponse naming the rejected spans,
// google.rpc.Status bodies in the request's encoding for 400, 413 and 415.
func TestOTLP_answers(t *testing.T) {
	e := otlpEnv(t)
	batch, err := os.ReadFile("../sources/otel/testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	// One more span with zero times: rejected, the rest accepted.
	bad := bytes.Replace(batch, []byte(`"spans":[`), []byte(`"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"00000000000000aa","name":"x"},`), 1)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(bad)
	_ = zw.Close()
	res, body := postOTLP(t, e, "application/json", gz.Bytes(), "Content-Encoding", "gzip")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	var resp coltracepb.ExportTraceServiceResponse
	if err := protojson.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetPartialSuccess().GetRejectedSpans() != 1 || !strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), "00000000000000aa") {
		t.Fatalf("partial success %v", resp.GetPartialSuccess())
	}
	got := otlpCards(t, e, otel.ConversationSessionID("conv 7/α"))
	if !strings.Contains(got["call_1"], "main.go") || !strings.Contains(got["call_2"], `data-state="error"`) {
		t.Fatalf("cards %v", got)
	}

	for _, tc := range []struct {
		name, ct string
		body     []byte
		status   int
	}{
		{"malformed protobuf", "application/x-protobuf", []byte{0xff, 0xff, 0xff}, http.StatusBadRequest},
		{"malformed json", "application/json", []byte(`{"resourceSpans":[`), http.StatusBadRequest},
		{"another content type", "text/plain", []byte(`x`), http.StatusUnsupportedMediaType},
		{"too large", "application/x-protobuf", make([]byte, 16<<20+1), http.StatusRequestEntityTooLarge},
	} {
		res, body := postOTLP(t, e, tc.ct, tc.body)
		if res.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.name, res.StatusCode, tc.status, body)
			continue
		}
		var st statuspb.Status
		if tc.ct == "application/json" {
			err = protojson.Unmarshal(body, &st)
		} else {
			err = proto.Unmarshal(body, &st)
		}
		if err != nil || st.GetMessage() == "" {
			t.Errorf("%s: the body is not a google.rpc.Status in the request's encoding: %v %q", tc.name, err, body)
		}
	}
}

// TestOTLP_ownerToken: with an owner token set, the receiver takes only
// exporters that send it (OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer …").
func TestOTLP_ownerToken(t *testing.T) {
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := otlpEnv(t, func(d *web.Deps) { d.Owner = guard })
	batch, err := os.ReadFile("../sources/otel/testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	if res, body := postOTLP(t, e, "application/json", batch); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d %s", res.StatusCode, body)
	}
	if n := e.storeCount(t); n != 0 {
		t.Fatalf("a refused request stored %d sessions", n)
	}
	tr, _, _ := sdk(t, e, otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + ownerToken}))
	_, s := tr.Start(context.Background(), "execute_tool glob", trace.WithAttributes(attribute.String(otel.AttrToolName, "glob")))
	s.End()
	if n := e.storeCount(t); n != 1 {
		t.Fatalf("with the token: %d sessions, want 1", n)
	}
}

func (e *env) storeCount(t *testing.T) int {
	t.Helper()
	list, err := e.store.ListSessions(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Sessions)
}

// blockingTraces is a TraceReceiver that holds each export until release
// is closed, telling entered when one began.
type blockingTraces struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingTraces) ReceiveTraces(ctx context.Context, body []byte, isJSON bool) (*coltracepb.ExportTraceServiceResponse, error) {
	b.entered <- struct{}{}
	<-b.release
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLP_overloaded: past Tuning.OTLPReceives exports at once the
// receiver answers 429 with Retry-After and a google.rpc.Status, before
// reading the body; once a slot is free it takes exports again.
func TestOTLP_overloaded(t *testing.T) {
	bt := blockingTraces{entered: make(chan struct{}, 2), release: make(chan struct{})}
	e := newEnv(t, func(d *web.Deps) {
		d.Traces = bt
		d.Tuning.OTLPReceives = 2
		d.Tuning.OTLPRetryAfter = 3 * time.Second
	})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			res, err := e.client().Post(e.base()+views.OTLPTracesURL(), "application/x-protobuf", nil)
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
	}
	<-bt.entered
	<-bt.entered // both slots are held
	for _, ct := range []string{"application/x-protobuf", "application/json"} {
		res, body := postOTLP(t, e, ct, nil)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "3" || res.Header.Get("Content-Type") != ct {
			t.Fatalf("%s: %d Retry-After %q %s, want 429 with Retry-After 3 in the request's encoding", ct, res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"))
		}
		var st statuspb.Status
		var err error
		if ct == "application/json" {
			err = protojson.Unmarshal(body, &st)
		} else {
			err = proto.Unmarshal(body, &st)
		}
		if err != nil || !strings.Contains(st.GetMessage(), "retry later") {
			t.Fatalf("%s: body is not the google.rpc.Status: %v %q", ct, err, body)
		}
	}
	close(bt.release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("a held export ended %d, want 200", code)
		}
	}
	if res, body := postOTLP(t, e, "application/x-protobuf", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("after the slots freed: %d %s", res.StatusCode, body)
	}
}

// TestOTLP_contentNotCaptured: spans of a sender whose content capture is
// off (no messages, no tool arguments or result attributes) give cards
// that say "arguments not recorded" and "result not recorded", never an
// empty box; captured ones do not say it.
func TestOTLP_contentNotCaptured(t *testing.T) {
	e := otlpEnv(t)
	tr, _, _ := sdk(t, e)
	ctx, agent := tr.Start(context.Background(), "invoke_agent quiet", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrConversationID, "conv-quiet")))
	_, chat := tr.Start(ctx, "chat m", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpChat), attribute.String(otel.AttrRequestModel, "m")))
	chat.End()
	_, tool := tr.Start(ctx, "execute_tool lookup", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpExecuteTool), attribute.String(otel.AttrToolName, "lookup"), attribute.String(otel.AttrToolCallID, "call_Q")))
	tool.End()
	_, seen := tr.Start(ctx, "execute_tool lookup", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpExecuteTool), attribute.String(otel.AttrToolName, "lookup"), attribute.String(otel.AttrToolCallID, "call_S"),
		attribute.String(otel.AttrToolArguments, `{"q":"x"}`), attribute.String(otel.AttrToolResult, "found x")))
	seen.End()
	agent.End()
	got := otlpCards(t, e, otel.ConversationSessionID("conv-quiet"))
	q := got["call_Q"]
	if !strings.Contains(q, `data-state="ok"`) || !strings.Contains(q, "arguments not recorded") || !strings.Contains(q, "result not recorded") || strings.Contains(q, "no output") {
		t.Errorf("call_Q's card does not say its content was not recorded:\n%s", q)
	}
	if s := got["call_S"]; strings.Contains(s, "not recorded") || !strings.Contains(s, "found x") {
		t.Errorf("call_S's captured content:\n%s", s)
	}
}

// TestOTLP_pendingArgsNotRecorded: a chat span asks for a call without
// its arguments: the pending card says "arguments not recorded".
func TestOTLP_pendingArgsNotRecorded(t *testing.T) {
	e := otlpEnv(t)
	tr, _, _ := sdk(t, e)
	ctx, agent := tr.Start(context.Background(), "invoke_agent a", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrConversationID, "conv-pend")))
	defer agent.End()
	_, chat := tr.Start(ctx, "chat m", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpChat), attribute.String(otel.AttrRequestModel, "m"),
		attribute.String(otel.AttrConversationID, "conv-pend"), attribute.String(otel.AttrOutputMessages, `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_P","name":"lookup"}]}]`)))
	chat.End()
	p := otlpCards(t, e, otel.ConversationSessionID("conv-pend"))["call_P"]
	if !strings.Contains(p, `data-state="pending"`) || !strings.Contains(p, "arguments not recorded") {
		t.Errorf("call_P's pending card:\n%s", p)
	}
}

// sendNested sends, with the real SDK, an agent whose delegate tool runs a
// nested invoke_agent (the subagent) that calls grep; it returns the
// parent's session id.
func sendNested(t testing.TB, tr trace.Tracer) string {
	ctx, agent := tr.Start(context.Background(), "invoke_agent coder", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrConversationID, "conv-nested")))
	_, chat := tr.Start(ctx, "chat m", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpChat), attribute.String(otel.AttrRequestModel, "m"),
		attribute.String(otel.AttrConversationID, "conv-nested"),
		attribute.String(otel.AttrOutputMessages, `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_D","name":"delegate","arguments":{"task":"find the bug"}}]}]`)))
	chat.End()
	tctx, del := tr.Start(ctx, "execute_tool delegate", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpExecuteTool), attribute.String(otel.AttrToolName, "delegate"), attribute.String(otel.AttrToolCallID, "call_D"),
		attribute.String(otel.AttrToolArguments, `{"task":"find the bug"}`)))
	sctx, sub := tr.Start(tctx, "invoke_agent explorer", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpInvokeAgent), attribute.String(otel.AttrAgentName, "explorer")))
	_, schat := tr.Start(sctx, "chat m", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpChat), attribute.String(otel.AttrRequestModel, "m")))
	schat.End()
	_, grep := tr.Start(sctx, "execute_tool grep", trace.WithAttributes(
		attribute.String(otel.AttrOperation, otel.OpExecuteTool), attribute.String(otel.AttrToolName, "grep"), attribute.String(otel.AttrToolCallID, "call_G"),
		attribute.String(otel.AttrToolArguments, `{"pattern":"bug"}`), attribute.String(otel.AttrToolResult, "main.go:7: bug")))
	grep.End()
	sub.End()
	del.SetAttributes(attribute.String(otel.AttrToolResult, "the bug is in main.go:7"))
	del.End()
	agent.End()
	return otel.ConversationSessionID("conv-nested")
}

// TestOTLP_nestedAgentLinked: a nested invoke_agent sent by the real SDK
// is a child session (origin subagent, its parent's id) and the parent has
// a link note on the delegate call, at its tool/call, naming the child —
// written once, whatever more batches arrive.
func TestOTLP_nestedAgentLinked(t *testing.T) {
	e := otlpEnv(t)
	tr, exp, rec := sdk(t, e)
	ctx := context.Background()
	parent := sendNested(t, tr)
	list, err := e.store.ListSessions(ctx, store.ListOptions{WithHeader: true})
	if err != nil {
		t.Fatal(err)
	}
	var child store.SessionInfo
	for _, s := range list.Sessions {
		if s.ID != parent {
			child = s
		}
	}
	if len(list.Sessions) != 2 || child.Header.Origin != "subagent" || child.Header.ParentSession != parent || child.Source != store.SourceOTel {
		t.Fatalf("sessions %+v, want %s and its subagent", list.Sessions, parent)
	}
	if got := otlpCards(t, e, child.ID); !strings.Contains(got["call_G"], "main.go:7: bug") {
		t.Errorf("the child's grep card: %v", got)
	}
	check := func() {
		t.Helper()
		ns, err := e.store.Notes(ctx, parent, notes.Query{Kind: notes.KindLink})
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) != 1 || ns[0].CallID != "call_D" || !strings.Contains(string(ns[0].Data), `"child":"`+child.ID+`"`) {
			t.Fatalf("link notes of the parent %+v", ns)
		}
		l, err := e.store.LoadSession(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		at := l.Events[ns[0].AtSeq]
		if at.Type != core.EventToolCall || !strings.Contains(string(at.Data), `"callId":"call_D"`) {
			t.Fatalf("the link note's atSeq %d is %s %s, not call_D's tool/call", ns[0].AtSeq, at.Type, at.Data)
		}
	}
	check()
	if err := exp.ExportSpans(ctx, rec.Ended()); err != nil { // a retry of everything
		t.Fatal(err)
	}
	check()
}
