package otel

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"prism/core"
)

func protoMarshal(s *tracepb.Span) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(s)
}

// Unknown stands for a provider or model an inference span does not name.
const Unknown = "unknown"

// NotReceived is the text of the result of a call an inference span asked
// for whose tool span never arrived before its step had to close.
const NotReceived = "no execute_tool span was received for this call"

// logBuilder appends events with contiguous seqs.
type logBuilder struct {
	events []core.Event
	used   map[string]bool    // call ids of the session
	calls  map[string]callRef // tool span key → its call
	err    error
}

func (b *logBuilder) add(typ string, at int64, data any, surface bool) int64 {
	raw, err := core.MarshalNoEscape(data)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("encode %s: %w", typ, err)
	}
	e := core.Event{Type: typ, Seq: int64(len(b.events)), Time: at, Data: raw}
	if surface {
		e.SurfaceOp = core.AppendOp()
	}
	b.events = append(b.events, e)
	return e.Seq
}

// call is one tool call of a step: what the inference span asked for and
// the tool span that ran it, either possibly missing.
type call struct {
	id, name, args string
	asked          bool // an inference span's tool_call part asked for it
	tool           *node
}

// step is one step of a turn: an inference span (nil for tools no
// inference span preceded) and the tool spans it asked for.
type step struct {
	inference *node
	calls     []*call
}

func buildLog(id string, turns []*turn) (Log, error) {
	sort.Slice(turns, func(i, j int) bool {
		if turns[i].start != turns[j].start {
			return turns[i].start < turns[j].start
		}
		return turns[i].key < turns[j].key
	})
	created := turns[0].start
	if created < 0 {
		created = 0
	}
	b := &logBuilder{used: map[string]bool{}, calls: map[string]callRef{}}
	traces := map[string]bool{}
	for i, t := range turns {
		traces[t.trace] = true
		b.turn(i+1, t, t.root != nil || i < len(turns)-1)
	}
	if b.err != nil {
		return Log{}, b.err
	}
	l := Log{Header: core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: created}, Events: b.events, calls: b.calls}
	for tr := range traces {
		l.Traces = append(l.Traces, tr)
	}
	sort.Strings(l.Traces)
	return l, nil
}

// turn appends one turn; closed says whether its turn/end is known (its
// outermost span arrived, or a later turn began).
func (b *logBuilder) turn(num int, t *turn, closed bool) {
	b.add(core.EventTurnStart, t.start, core.TurnStart{Turn: num}, false)
	steps, responses := planSteps(t)
	b.userMessages(num, t, steps)
	last := t.start
	for k, s := range steps {
		last = b.step(num, k+1, s, responses, closed || k < len(steps)-1)
	}
	if !closed {
		return
	}
	reason := core.TurnEndReason{Kind: core.TurnCompleted}
	at := last
	switch {
	case t.root == nil:
		reason.Kind = core.TurnInterrupted
	default:
		at = max(at, t.root.end)
		if msg, code, failed := failure(t.root); failed {
			reason = core.TurnEndReason{Kind: core.TurnError, Error: &core.LLMFailure{Message: msg, Code: code}}
		}
	}
	b.add(core.EventTurnEnd, at, core.TurnEnd{Turn: num, Reason: reason}, false)
}

// planSteps groups a turn's inference and tool spans into steps, and
// collects the tool_call_response parts of its inference inputs by call id.
func planSteps(t *turn) ([]*step, map[string]string) {
	var steps []*step
	asked := map[string]*call{} // call id → the call an inference span asked for
	responses := map[string]string{}
	for _, m := range t.members {
		if !m.isInference() {
			continue
		}
		s := &step{inference: m}
		for _, msg := range messagesOf(m.a, AttrOutputMessages) {
			for _, p := range msg.Parts {
				if p.Type != "tool_call" || p.ID == "" || asked[p.ID] != nil {
					continue
				}
				c := &call{id: p.ID, name: p.Name, args: rawText(p.Arguments), asked: true}
				asked[p.ID] = c
				s.calls = append(s.calls, c)
			}
		}
		for _, msg := range messagesOf(m.a, AttrInputMessages) {
			for _, p := range msg.Parts {
				if p.Type != "tool_call_response" || p.ID == "" {
					continue
				}
				if _, ok := responses[p.ID]; ok {
					continue
				}
				r := p.Response
				if len(r) == 0 {
					r = p.Result
				}
				responses[p.ID] = rawText(r)
			}
		}
		steps = append(steps, s)
	}
	var orphans *step
	for _, m := range t.members {
		if !m.isTool() {
			continue
		}
		id := m.a.str(AttrToolCallID)
		if id == "" {
			id = m.id
		}
		if c := asked[id]; c != nil && c.tool == nil {
			c.tool = m
			continue
		}
		c := &call{id: id, tool: m}
		var home *step
		for _, s := range steps {
			if s.inference.start <= m.start {
				home = s
			}
		}
		if home == nil {
			if orphans == nil {
				orphans = &step{}
			}
			home = orphans
		}
		home.calls = append(home.calls, c)
	}
	if orphans != nil {
		steps = append([]*step{orphans}, steps...)
	}
	return steps, responses
}

// userMessages appends the user messages that began the turn, when
// captured: the trailing user messages of the first inference span's input.
func (b *logBuilder) userMessages(turn int, t *turn, steps []*step) {
	var first *node
	for _, s := range steps {
		if s.inference != nil {
			first = s.inference
			break
		}
	}
	if first == nil {
		return
	}
	ms := messagesOf(first.a, AttrInputMessages)
	from := len(ms)
	for from > 0 && ms[from-1].Role == core.RoleUser && !hasToolResponse(ms[from-1]) {
		from--
	}
	for i, m := range ms[from:] {
		text := partsText(m.Parts)
		if text == "" {
			continue
		}
		id := fmt.Sprintf("otel-%s-in-%d", first.id, i)
		b.add(core.EventUserMessage, t.start, core.NewUserMessage(id, text), true)
	}
}

func hasToolResponse(m message) bool {
	for _, p := range m.Parts {
		if p.Type == "tool_call_response" {
			return true
		}
	}
	return false
}

func partsText(ps []part) string {
	var out []string
	for _, p := range ps {
		if p.Type == "text" {
			if s := rawText(p.Content); s != "" {
				out = append(out, s)
			}
		}
	}
	return strings.Join(out, "\n\n")
}

// step appends one step and returns the time of its last event. closed says
// whether the step must end now: a call still without its tool span then
// gets a NotReceived error result.
func (b *logBuilder) step(turn, num int, s *step, responses map[string]string, closed bool) int64 {
	at := int64(0)
	if s.inference != nil {
		at = s.inference.start
	} else if len(s.calls) > 0 {
		at = s.calls[0].tool.start
	}
	b.add(core.EventStepStart, at, core.StepBoundary{Turn: turn, Step: num}, false)
	end := at
	if n := s.inference; n != nil {
		b.add(core.EventAssistantMessage, n.end, assistant(turn, num, n), true)
		end = max(end, n.end)
	}
	callSeq := make([]int64, len(s.calls))
	ids := make([]string, len(s.calls))
	pending := false
	for i, c := range s.calls {
		id := c.id
		if b.used[id] {
			id = c.id + "-" + spanIDOr(c.tool, i)
		}
		b.used[id] = true
		ids[i] = id
		name, args := c.name, c.args
		when := end
		if c.tool != nil {
			if n := c.tool.a.str(AttrToolName); n != "" {
				name = n
			}
			if a, ok := c.tool.a.text(AttrToolArguments); ok {
				args = a
			}
			if s.inference == nil || !c.asked {
				when = c.tool.start
			}
		} else {
			pending = true
		}
		if name == "" {
			name = "unknown"
		}
		callSeq[i] = b.add(core.EventToolCall, when, core.ToolCall{Turn: turn, Step: num, CallID: id, Name: name, Arguments: args}, false)
		if c.tool != nil {
			b.calls[c.tool.key] = callRef{id: id, seq: callSeq[i]}
		}
	}
	// Results in the order the tools ended.
	order := make([]int, 0, len(s.calls))
	for i, c := range s.calls {
		if c.tool != nil {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(x, y int) bool { return less(endFirst(s.calls[order[x]].tool), endFirst(s.calls[order[y]].tool)) })
	for _, i := range order {
		c := s.calls[i]
		text, isError, recorded := resultText(c, responses)
		d := core.ToolResultData{Turn: turn, Step: num,
			Message: core.NewToolResultMessage("otel-"+c.tool.id+"-result", ids[i], core.Text(text), isError)}
		if text == "" {
			d.Message = core.NewToolResultMessage("otel-"+c.tool.id+"-result", ids[i], core.Content{}, isError)
		}
		if !recorded {
			d.Meta = json.RawMessage(`{"` + MetaResultNotRecorded + `":true}`)
		}
		b.resultEvent(c.tool.end, d, callSeq[i])
		end = max(end, c.tool.end)
	}
	if pending && !closed {
		return end
	}
	for i, c := range s.calls {
		if c.tool != nil {
			continue
		}
		d := core.ToolResultData{Turn: turn, Step: num,
			Message: core.NewToolResultMessage(fmt.Sprintf("otel-%s-missing-%d", spanIDOr(s.inference, i), i), ids[i], core.Text(NotReceived), true)}
		b.resultEvent(end, d, callSeq[i])
	}
	b.add(core.EventStepEnd, end, core.StepBoundary{Turn: turn, Step: num}, false)
	return end
}

func (b *logBuilder) resultEvent(at int64, d core.ToolResultData, callSeq int64) {
	seq := b.add(core.EventToolResult, at, d, true)
	b.events[seq].SourceEventSeqs = []int64{callSeq}
}

// endFirst orders spans by end time (less orders by start).
func endFirst(n *node) *node {
	c := *n
	c.start, c.end = n.end, n.start
	return &c
}

func spanIDOr(n *node, i int) string {
	if n != nil {
		return n.id
	}
	return fmt.Sprint(i)
}

// MetaResultNotRecorded is the key of the meta of a tool result whose
// content was not captured ({"resultNotRecorded": true}): the card says
// "result not recorded" (views.MetaResultNotRecorded), never an empty box.
// A call whose arguments were not captured has an empty argument string,
// and its card says "arguments not recorded".
const MetaResultNotRecorded = "resultNotRecorded"

// resultText is a tool span's result: the failure's text on an error, else
// gen_ai.tool.call.result, else the tool_call_response part of its id;
// recorded is false when none of them is there (content capture off).
func resultText(c *call, responses map[string]string) (text string, isError, recorded bool) {
	if msg, _, failed := failure(c.tool); failed {
		return msg, true, true
	}
	if r, ok := c.tool.a.text(AttrToolResult); ok {
		return r, false, true
	}
	r, ok := responses[c.id]
	return r, false, ok
}

// failure reports whether a span failed (status ERROR or error.type set),
// with its message — the status message, else the exception event's
// exception.message, else error.type — and its code (error.type, else the
// status code's name).
func failure(n *node) (msg, code string, failed bool) {
	code = n.a.str(AttrErrorType)
	st := n.Span.Span.GetStatus()
	if code == "" && st.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		return "", "", false
	}
	msg = st.GetMessage()
	if msg == "" {
		for _, ev := range n.Span.Span.GetEvents() {
			if ev.GetName() == "exception" || strings.HasSuffix(ev.GetName(), ".exception") {
				if m := attrsOf(ev.GetAttributes()).str("exception.message"); m != "" {
					msg = m
					break
				}
			}
		}
	}
	if code == "" {
		code = "STATUS_CODE_ERROR"
	}
	if msg == "" {
		msg = code
	}
	return msg, code, true
}

// assistant is an inference span's assistant/message: its output parts
// when captured, its model and its usage.
func assistant(turn, num int, n *node) core.AssistantMessage {
	content := core.Content{}
	for _, m := range messagesOf(n.a, AttrOutputMessages) {
		if m.Role != "" && m.Role != core.RoleAssistant {
			continue
		}
		for _, p := range m.Parts {
			switch p.Type {
			case "text":
				if s := rawText(p.Content); s != "" {
					content = append(content, &core.TextBlock{Text: s})
				}
			case "reasoning":
				if s := rawText(p.Content); s != "" {
					content = append(content, &core.ReasoningBlock{Text: s})
				}
			case "tool_call":
				if p.ID != "" {
					content = append(content, &core.ToolCallBlock{ID: p.ID, Name: p.Name, Arguments: rawText(p.Arguments)})
				}
			}
		}
	}
	provider := n.a.str(AttrProvider)
	if provider == "" {
		provider = n.a.str(AttrSystem)
	}
	model := n.a.str(AttrResponseModel)
	if model == "" {
		model = n.a.str(AttrRequestModel)
	}
	// An assistant message names its provider and model (core.ValidateLog).
	if provider == "" {
		provider = Unknown
	}
	if model == "" {
		model = Unknown
	}
	am := core.AssistantMessage{Turn: turn, Step: num, Message: core.Message{
		ID: "otel-" + n.id, Role: core.RoleAssistant, Content: content,
		Source: core.Source{Kind: core.SourceModel, Provider: provider, Model: model},
	}}
	var u core.TokenUsage
	var have bool
	for _, f := range []struct {
		key string
		to  *int64
	}{{AttrInputTokens, &u.InputTokens}, {AttrOutputTokens, &u.OutputTokens}, {AttrCacheRead, &u.CacheReadTokens},
		{AttrCacheCreation, &u.CacheWriteTokens}, {AttrReasoning, &u.ReasoningTokens}} {
		if v, ok := n.a.int(f.key); ok && v >= 0 {
			*f.to, have = v, true
		}
	}
	if have {
		am.Usage = &u
	}
	return am
}
