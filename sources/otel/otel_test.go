package otel_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"prism/core"
	"prism/sources/otel"
)

// batch reads testdata/batch.json (written from the OTLP/JSON and GenAI
// specifications): invoke_agent → chat (asking for two calls) → a
// successful glob and a failing bash, in the order spans end.
func batch(t testing.TB) []otel.Span {
	t.Helper()
	body, err := os.ReadFile("testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := otel.DecodeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	spans, rejected := otel.Spans(req)
	if len(rejected) != 0 || len(spans) != 4 {
		t.Fatalf("spans %d, rejected %v", len(spans), rejected)
	}
	return spans
}

func derive(t testing.TB, spans []otel.Span) []otel.Log {
	t.Helper()
	logs, err := otel.Derive(spans)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if err := core.ValidateLog(l.Header, l.Events); err != nil {
			t.Fatalf("%s: %v", l.Header.ID, err)
		}
		if err := core.CheckRelations(l.Events); err != nil {
			t.Fatalf("%s: %v", l.Header.ID, err)
		}
	}
	return logs
}

func types(evs []core.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

// card is what a call's two events say.
type card struct {
	name, args, result string
	isError, done      bool
}

func cards(t testing.TB, evs []core.Event) map[string]*card {
	t.Helper()
	out := map[string]*card{}
	for _, e := range evs {
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			out[d.CallID] = &card{name: d.Name, args: d.Arguments}
		case core.EventToolResult:
			var d core.ToolResultData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			c := out[d.CallID()]
			if c == nil {
				t.Fatalf("result of unknown call %s", d.CallID())
			}
			r := d.Projection()
			c.done, c.isError, c.result = true, r.IsError, r.Content.PlainText()
		}
	}
	return out
}

func encode(t testing.TB, evs []core.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range evs {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func TestDerive_batch(t *testing.T) {
	logs := derive(t, batch(t))
	if len(logs) != 1 {
		t.Fatalf("%d sessions, want 1", len(logs))
	}
	l := logs[0]
	if want := otel.ConversationSessionID("conv 7/α"); l.Header.ID != want || !strings.HasPrefix(want, "otel-") || strings.Contains(want, " ") {
		t.Errorf("id %q, want %q (hashed, namespaced)", l.Header.ID, want)
	}
	if l.Header.CreatedAt != 1800000001000 {
		t.Errorf("createdAt %d", l.Header.CreatedAt)
	}
	want := "turn/start user/message step/start assistant/message tool/call tool/call tool/result tool/result step/end turn/end"
	if got := types(l.Events); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	cs := cards(t, l.Events)
	if c := cs["call_1"]; c == nil || c.name != "glob" || c.args != `{"pattern":"*.go"}` || c.result != `["main.go","x.go"]` || c.isError || !c.done {
		t.Errorf("call_1 = %+v", c)
	}
	if c := cs["call_2"]; c == nil || c.name != "bash" || c.args != `{"command":"false"}` || c.result != "exit status 1" || !c.isError {
		t.Errorf("call_2 = %+v", c)
	}
	var am core.AssistantMessage
	if err := json.Unmarshal(l.Events[3].Data, &am); err != nil {
		t.Fatal(err)
	}
	if am.Usage == nil || am.Usage.InputTokens != 900 || am.Usage.OutputTokens != 42 || am.Usage.CacheReadTokens != 512 {
		t.Errorf("usage %+v", am.Usage)
	}
	if am.Message.Source.Model != "gpt-4o" || am.Message.Source.Provider != "openai" || len(am.Message.Content) != 3 || am.Message.Content[0].(*core.TextBlock).Text != "Looking." {
		t.Errorf("assistant %+v", am.Message)
	}
	var um core.Message
	if err := json.Unmarshal(l.Events[1].Data, &um); err != nil || um.Content.PlainText() != "list the go files" {
		t.Errorf("user message %s", l.Events[1].Data)
	}
	var end core.TurnEnd
	if err := json.Unmarshal(l.Events[len(l.Events)-1].Data, &end); err != nil || end.Reason.Kind != core.TurnCompleted {
		t.Errorf("turn end %s", l.Events[len(l.Events)-1].Data)
	}
}

// TestDerive_orderIndependent: every order of the same spans gives the
// same log, byte for byte.
func TestDerive_orderIndependent(t *testing.T) {
	spans := batch(t)
	want := encode(t, derive(t, spans)[0].Events)
	var permute func(k int)
	n := 0
	permute = func(k int) {
		if k == len(spans) {
			n++
			if got := encode(t, derive(t, spans)[0].Events); !bytes.Equal(got, want) {
				t.Fatalf("order %d gives another log:\n%s\nwant\n%s", n, got, want)
			}
			return
		}
		for i := k; i < len(spans); i++ {
			spans[k], spans[i] = spans[i], spans[k]
			permute(k + 1)
			spans[k], spans[i] = spans[i], spans[k]
		}
	}
	permute(0)
	if n != 24 {
		t.Fatalf("%d orders", n)
	}
}

// TestDerive_endOrderExtends: delivered as the spans end (chat, then the
// tools, then the agent), each log extends the one before: the calls are
// pending until their tool spans arrive, then complete; the turn ends with
// the agent span.
func TestDerive_endOrderExtends(t *testing.T) {
	spans := batch(t) // chat, glob, bash, invoke_agent
	var prev []byte
	wantTypes := []string{
		"turn/start user/message step/start assistant/message tool/call tool/call",
		"turn/start user/message step/start assistant/message tool/call tool/call tool/result",
		"turn/start user/message step/start assistant/message tool/call tool/call tool/result tool/result step/end",
		"turn/start user/message step/start assistant/message tool/call tool/call tool/result tool/result step/end turn/end",
	}
	for i := range spans {
		logs := derive(t, spans[:i+1])
		if len(logs) != 1 || logs[0].Header.ID != otel.ConversationSessionID("conv 7/α") {
			t.Fatalf("after %d spans: %d sessions", i+1, len(logs))
		}
		if got := types(logs[0].Events); got != wantTypes[i] {
			t.Errorf("after %d spans\n got %s\nwant %s", i+1, got, wantTypes[i])
		}
		cur := encode(t, logs[0].Events)
		if !bytes.HasPrefix(cur, prev) {
			t.Errorf("after %d spans the log does not extend the one before", i+1)
		}
		prev = cur
	}
	if c := cards(t, derive(t, spans[:1])[0].Events)["call_1"]; c == nil || c.done || c.args != `{"pattern":"*.go"}` {
		t.Errorf("pending call_1 = %+v", c)
	}
}

// TestDerive_toolFirst: a tool span alone has no conversation yet (tool
// spans do not carry it): its session is its trace's; once the chat span
// arrives the same call lands in the conversation's session.
func TestDerive_toolFirst(t *testing.T) {
	spans := batch(t)
	logs := derive(t, spans[1:2])
	if len(logs) != 1 || logs[0].Header.ID != "otel-5b8efff798038103d269b633813fc60c" {
		t.Fatalf("sessions %+v", logs)
	}
	if c := cards(t, logs[0].Events)["call_1"]; c == nil || !c.done || c.result != `["main.go","x.go"]` {
		t.Errorf("call_1 = %+v", c)
	}
	logs = derive(t, spans[:2])
	if len(logs) != 1 || logs[0].Header.ID != otel.ConversationSessionID("conv 7/α") {
		t.Fatalf("sessions %+v", logs)
	}
}

// TestDerive_laterTurnClosesOpenOne: two traces of one conversation; the
// first's agent span never arrived, so when the second turn begins the
// first is closed as interrupted, its unanswered call with NotReceived.
func TestDerive_laterTurnClosesOpenOne(t *testing.T) {
	spans := batch(t)
	chat := spans[0]
	second := &tracepb.Span{TraceId: bytes.Repeat([]byte{7}, 16), SpanId: bytes.Repeat([]byte{8}, 8),
		Name: "chat gpt-4o", StartTimeUnixNano: 1800000010000000000, EndTimeUnixNano: 1800000011000000000,
		Attributes: chat.Span.Attributes[:4]}
	logs := derive(t, []otel.Span{chat, {Span: second}})
	if len(logs) != 1 {
		t.Fatalf("%d sessions", len(logs))
	}
	want := "turn/start user/message step/start assistant/message tool/call tool/call tool/result tool/result step/end turn/end " +
		"turn/start step/start assistant/message step/end turn/end"
	if got := types(logs[0].Events); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if c := cards(t, logs[0].Events)["call_2"]; c == nil || c.result != otel.NotReceived || !c.isError {
		t.Errorf("call_2 = %+v", c)
	}
	if !strings.Contains(string(logs[0].Events[9].Data), core.TurnInterrupted) {
		t.Errorf("first turn end %s", logs[0].Events[9].Data)
	}
	if len(logs[0].Traces) != 2 {
		t.Errorf("traces %v", logs[0].Traces)
	}
}

func TestCheckSpan(t *testing.T) {
	ok := &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), StartTimeUnixNano: 1, EndTimeUnixNano: 2}
	if why := otel.CheckSpan(ok); why != "" {
		t.Fatal(why)
	}
	for name, mut := range map[string]func(s *tracepb.Span){
		"no trace id":  func(s *tracepb.Span) { s.TraceId = nil },
		"zero span id": func(s *tracepb.Span) { s.SpanId = make([]byte, 8) },
		"zero time":    func(s *tracepb.Span) { s.StartTimeUnixNano = 0 },
		"end first":    func(s *tracepb.Span) { s.StartTimeUnixNano = 3 },
		"short parent": func(s *tracepb.Span) { s.ParentSpanId = []byte{1} },
	} {
		s := &tracepb.Span{TraceId: ok.TraceId, SpanId: ok.SpanId, StartTimeUnixNano: 1, EndTimeUnixNano: 2}
		mut(s)
		if otel.CheckSpan(s) == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestConversationSessionID(t *testing.T) {
	if got := otel.ConversationSessionID("conv_1"); got != "otel-conv_1" {
		t.Errorf("plain: %q", got)
	}
	a, b := otel.ConversationSessionID("../x"), otel.ConversationSessionID("../y")
	if a == b || !strings.HasPrefix(a, "otel-") || strings.Contains(a, "/") {
		t.Errorf("hashed: %q %q", a, b)
	}
}

func TestDecodeJSON_badInput(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     `{"resourceSpans":`,
		"bad hex id":   `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`,
		"wrong type":   `{"resourceSpans":"x"}`,
		"invalid utf8": "{\"resourceSpans\":[],\"x\":\"\xff\"}",
		"two objects":  `{} {}`,
	} {
		if _, err := otel.DecodeJSON([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestEncodeJSON_roundTrip: OTLP JSON written by EncodeJSON (hex ids) reads
// back as the same request.
func TestEncodeJSON_roundTrip(t *testing.T) {
	body, _ := os.ReadFile("testdata/batch.json")
	req, err := otel.DecodeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := otel.EncodeJSON(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"5b8efff798038103d269b633813fc60c"`)) {
		t.Fatalf("ids not hex: %s", out)
	}
	back, err := otel.DecodeJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	a, b := derive(t, spansOf(back)), derive(t, spansOf(req))
	if !bytes.Equal(encode(t, a[0].Events), encode(t, b[0].Events)) {
		t.Fatal("round trip changed the log")
	}
}

func spansOf(req interface {
	GetResourceSpans() []*tracepb.ResourceSpans
}) []otel.Span {
	var out []otel.Span
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out = append(out, otel.Span{Span: s})
			}
		}
	}
	return out
}

// TestSpans_capsAttributes: a string attribute past MaxAttributeBytes is cut
// at a rune boundary and marked.
func TestSpans_capsAttributes(t *testing.T) {
	spans := batch(t)
	big := strings.Repeat("é", otel.MaxAttributeBytes) // two bytes a rune
	s := spans[1].Span
	s.Attributes[3].Value.Value = &commonpb.AnyValue_StringValue{StringValue: big}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{s}}}}}}
	out, _ := otel.Spans(req)
	v := out[0].Span.Attributes[3].Value.GetStringValue()
	if len(v) > otel.MaxAttributeBytes+len(otel.TruncatedMark) || !strings.HasSuffix(v, otel.TruncatedMark) || !utf8.ValidString(v) {
		t.Fatalf("attribute of %d bytes, marked %v, valid %v", len(v), strings.HasSuffix(v, otel.TruncatedMark), utf8.ValidString(v))
	}
}

// TestDerive_deepChain: a chain of 20000 spans, each the parent of the
// next, derives in linear time (walks stop at a bounded depth) and validly.
func TestDerive_deepChain(t *testing.T) {
	const n = 20000
	trace := bytes.Repeat([]byte{3}, 16)
	var spans []otel.Span
	for i := 0; i < n; i++ {
		s := &tracepb.Span{TraceId: trace, SpanId: []byte{0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i) | 1}, Name: "execute_tool t",
			StartTimeUnixNano: uint64(1e18) + uint64(i), EndTimeUnixNano: uint64(1e18) + uint64(i) + 1}
		s.SpanId[5] = byte(i >> 16)
		s.SpanId[4] = 1
		if i > 0 {
			s.ParentSpanId = spans[i-1].Span.SpanId
		}
		spans = append(spans, otel.Span{Span: s})
	}
	logs := derive(t, spans)
	calls := 0
	for _, l := range logs {
		calls += len(cards(t, l.Events))
	}
	if calls == 0 {
		t.Fatal("no calls derived")
	}
}

// TestDerive_subagent: an execute_tool span that delegated to a nested
// invoke_agent: the delegate call stays in the parent's session; the
// nested agent's inference and tool spans make a child session (origin
// subagent, parentSession the parent's), in any order of arrival.
func TestDerive_subagent(t *testing.T) {
	trace := bytes.Repeat([]byte{9}, 16)
	id := func(b byte) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, b} }
	at := func(s int) uint64 { return uint64(1_800_000_000_000_000_000) + uint64(s)*1e9 }
	mk := func(span, parent byte, name string, start, end int, kv ...string) otel.Span {
		s := &tracepb.Span{TraceId: trace, SpanId: id(span), Name: name, StartTimeUnixNano: at(start), EndTimeUnixNano: at(end)}
		if parent != 0 {
			s.ParentSpanId = id(parent)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Attributes = append(s.Attributes, &commonpb.KeyValue{Key: kv[i], Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: kv[i+1]}}})
		}
		return otel.Span{Span: s}
	}
	spans := []otel.Span{
		mk(1, 0, "invoke_agent coder", 0, 20, otel.AttrOperation, otel.OpInvokeAgent, otel.AttrConversationID, "conv_sub"),
		mk(2, 1, "chat m", 1, 2, otel.AttrOperation, otel.OpChat, otel.AttrOutputMessages,
			`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_D","name":"delegate","arguments":{"task":"explore"}}]}]`),
		mk(3, 1, "execute_tool delegate", 3, 18, otel.AttrOperation, otel.OpExecuteTool, otel.AttrToolName, "delegate", otel.AttrToolCallID, "call_D",
			otel.AttrToolResult, "found it"),
		mk(4, 3, "invoke_agent explorer", 4, 17, otel.AttrOperation, otel.OpInvokeAgent, otel.AttrAgentName, "explorer"),
		mk(5, 4, "chat m", 5, 6, otel.AttrOperation, otel.OpChat),
		mk(6, 4, "execute_tool grep", 7, 8, otel.AttrOperation, otel.OpExecuteTool, otel.AttrToolName, "grep", otel.AttrToolCallID, "call_G",
			otel.AttrToolResult, "a.go:1"),
	}
	logs := derive(t, spans)
	if len(logs) != 2 {
		t.Fatalf("%d sessions, want the parent and its subagent", len(logs))
	}
	parent, child := logs[0], logs[1]
	if parent.Header.ID != "otel-conv_sub" || child.Header.ParentSession != parent.Header.ID || child.Header.Origin != "subagent" {
		t.Fatalf("headers %+v / %+v", parent.Header, child.Header)
	}
	pc, cc := cards(t, parent.Events), cards(t, child.Events)
	if len(pc) != 1 || pc["call_D"] == nil || pc["call_D"].result != "found it" {
		t.Errorf("parent calls %v", pc)
	}
	if len(cc) != 1 || cc["call_G"] == nil || cc["call_G"].result != "a.go:1" {
		t.Errorf("child calls %v", cc)
	}
	// The child's link: the delegate call of the parent, at its tool/call.
	l := child.Link
	if l == nil || l.Parent != parent.Header.ID || l.CallID != "call_D" || parent.Events[l.AtSeq].Type != core.EventToolCall ||
		!strings.Contains(string(parent.Events[l.AtSeq].Data), `"callId":"call_D"`) {
		t.Errorf("child link %+v", l)
	}
	if parent.Link != nil {
		t.Errorf("the parent has a link %+v", parent.Link)
	}
	rev := append([]otel.Span(nil), spans...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	again := derive(t, rev)
	if again[1].Header != child.Header || !bytes.Equal(encode(t, again[1].Events), encode(t, child.Events)) || again[1].Link == nil || *again[1].Link != *child.Link {
		t.Error("another order gives another child session")
	}
}
