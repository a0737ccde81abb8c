// Package otel maps OpenTelemetry GenAI spans onto prism sessions: the
// spans a sender exported so far become, per conversation, a session header
// and a log of core events (turns, steps, assistant messages, tool calls and
// their results) that prism shows as its cards.
//
// It implements the GenAI semantic conventions v1.41.0 names
// (open-telemetry/semantic-conventions, docs/gen-ai) plus the newer span
// name gen_ai.execute_tool of open-telemetry/semantic-conventions-genai
// (model/gen-ai/spans.yaml at 7e7e4e763354b505b8e1f76512f17a1977b00f70;
// both "execute_tool {tool}" and "gen_ai.execute_tool {tool}" are read):
//
//   - invoke_agent: a turn. A nested one (an invoke_agent below another,
//     usually under the execute_tool span that delegated to it) is the one
//     turn of a child session: origin "subagent", parentSession the
//     session of the span above it, id IDPrefix plus a hash of both;
//   - chat, generate_content, text_completion: a step with the model
//     (gen_ai.response.model, else gen_ai.request.model), the usage
//     (gen_ai.usage.*) and, when captured, the messages
//     (gen_ai.input.messages, gen_ai.output.messages);
//   - execute_tool: a tool/call and its tool/result in the step whose
//     inference span asked for it. The call id is gen_ai.tool.call.id, else
//     the span id; the arguments and result come from the opt-in
//     gen_ai.tool.call.arguments and gen_ai.tool.call.result, else from the
//     inference spans' tool_call and tool_call_response parts with the same
//     id. A span with status ERROR or error.type is an error result whose
//     text is the status message, else the exception event's message, else
//     error.type.
//
// A session gathers the turns of one gen_ai.conversation.id (a span takes
// the id of its nearest ancestor that has one), else of one trace. Its id is
// namespaced so it cannot collide with other sources: "otel-" plus the
// conversation id when that is a plain token, else "otel-" plus a hash.
//
// Derive is a pure function of the set of spans: the same spans give the
// same logs in any order of arrival, so a receiver stores spans and derives
// again when more arrive. Spans exist only once they ended, and children end
// first; a turn whose outermost span has not arrived is still running, and a
// call an inference span asked for whose tool span has not arrived is
// pending. When a later span changes what came before, the new log is not an
// extension of the old one and the receiver replaces it.
package otel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"prism/core"
)

// Attribute keys and operation names of the GenAI semantic conventions
// (v1.41.0 names).
const (
	AttrOperation      = "gen_ai.operation.name"
	AttrConversationID = "gen_ai.conversation.id"
	AttrProvider       = "gen_ai.provider.name"
	AttrSystem         = "gen_ai.system" // the provider before v1.37
	AttrRequestModel   = "gen_ai.request.model"
	AttrResponseModel  = "gen_ai.response.model"
	AttrAgentName      = "gen_ai.agent.name"
	AttrInputMessages  = "gen_ai.input.messages"
	AttrOutputMessages = "gen_ai.output.messages"
	AttrToolName       = "gen_ai.tool.name"
	AttrToolCallID     = "gen_ai.tool.call.id"
	AttrToolArguments  = "gen_ai.tool.call.arguments"
	AttrToolResult     = "gen_ai.tool.call.result"
	AttrInputTokens    = "gen_ai.usage.input_tokens"
	AttrOutputTokens   = "gen_ai.usage.output_tokens"
	AttrCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	AttrCacheCreation  = "gen_ai.usage.cache_creation.input_tokens"
	AttrReasoning      = "gen_ai.usage.reasoning.output_tokens"
	AttrErrorType      = "error.type"

	OpInvokeAgent    = "invoke_agent"
	OpChat           = "chat"
	OpGenerate       = "generate_content"
	OpTextCompletion = "text_completion"
	OpExecuteTool    = "execute_tool"
)

// IDPrefix begins the id of every session this package derives.
const IDPrefix = "otel-"

// Span is one received span and the service.name of the resource that sent it.
type Span struct {
	Service string
	Span    *tracepb.Span
}

// Log is one derived session: its header, its whole log, and the traces
// (hex ids) whose spans it holds.
type Log struct {
	Header core.SessionHeader
	Events []core.Event
	Traces []string
	// Link, on a subagent's session, is the call of its parent's log that
	// spawned it (the execute_tool span above the nested invoke_agent),
	// when that call is in the parent's log; nil otherwise.
	Link *Link

	calls map[string]callRef // tool span key → its call in this log
}

// Link is the call of a parent session that spawned a subagent's session:
// what the parent's "link" note (notes.KindLink) says, on CallID from
// AtSeq (the seq of the call's tool/call event).
type Link struct {
	Parent string
	CallID string
	AtSeq  int64
}

// callRef is a tool span's call in a derived log.
type callRef struct {
	id  string
	seq int64
}

// ConversationID returns the span's own gen_ai.conversation.id ("" when it
// has none); a receiver indexes spans by it to find the traces of a
// conversation.
func ConversationID(s *tracepb.Span) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == AttrConversationID {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// CheckSpan reports why a span cannot be used ("" when it can): its ids must
// have their sizes and not be zero, its times must be set and end not before
// start.
func CheckSpan(s *tracepb.Span) string {
	switch {
	case s == nil:
		return "empty span"
	case len(s.TraceId) != 16 || allZero(s.TraceId):
		return "trace id must be 16 bytes, not all zero"
	case len(s.SpanId) != 8 || allZero(s.SpanId):
		return "span id must be 8 bytes, not all zero"
	case len(s.ParentSpanId) != 0 && len(s.ParentSpanId) != 8:
		return "parent span id must be empty or 8 bytes"
	case s.StartTimeUnixNano == 0 || s.EndTimeUnixNano == 0:
		return "start and end times must be set"
	case s.EndTimeUnixNano < s.StartTimeUnixNano:
		return "end time is before start time"
	case s.StartTimeUnixNano/1e6 > maxSafe:
		return "start time is out of range"
	}
	return ""
}

const maxSafe = 1<<53 - 1

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// node is one span of the derivation, with what the mapping reads of it.
type node struct {
	Span
	trace, id, parent string // hex
	key, parentKey    string // trace/span
	op                string
	a                 attrs
	start, end        int64 // epoch ms
}

func (n *node) isInference() bool {
	return n.op == OpChat || n.op == OpGenerate || n.op == OpTextCompletion
}

func (n *node) isTool() bool {
	return n.op == OpExecuteTool
}

// operation returns the span's GenAI operation: gen_ai.operation.name, else
// the first word of its name (gen_ai.execute_tool reads as execute_tool).
func operation(s *tracepb.Span, a attrs) string {
	op := a.str(AttrOperation)
	if op == "" {
		op, _, _ = strings.Cut(s.GetName(), " ")
	}
	return strings.TrimPrefix(op, "gen_ai.")
}

// Derive maps a set of spans to sessions (see the package doc). Spans that
// CheckSpan refuses are skipped, and of spans with the same trace and span
// id one is used (the same one whatever the order). The logs are sorted by
// session id, parents before their subagents' sessions; each passes
// core.ValidateLog and core.CheckRelations.
func Derive(spans []Span) ([]Log, error) {
	nodes := make(map[string]*node, len(spans))
	for _, s := range spans {
		if CheckSpan(s.Span) != "" {
			continue
		}
		n := newNode(s)
		if old, ok := nodes[n.key]; ok && !preferred(n, old) {
			continue
		}
		nodes[n.key] = n
	}
	// A span under a nested invoke_agent (one with an invoke_agent above
	// it) belongs to that agent's child session; any other span's turn is
	// the key of its outermost invoke_agent ancestor (or itself), else the
	// top of its known chain — the missing parent that chain stops at, or
	// the root.
	turnOf := make(map[string]string, len(nodes))
	owner := map[string]string{}
	turns := map[string][]*node{}
	nested := map[string][]*node{}
	for _, n := range sortedNodes(nodes) {
		if o := ownerOf(n, nodes); o != "" {
			owner[n.key] = o
			nested[o] = append(nested[o], n)
			continue
		}
		t := turnKey(n, nodes)
		turnOf[n.key] = t
		turns[t] = append(turns[t], n)
	}
	// Each turn's session: the conversation id nearest to the turn's top
	// (inherited from ancestors), else its trace.
	sessions := map[string][]*turn{}
	sessionOfTurn := map[string]string{}
	for key, members := range turns {
		t := newTurn(key, members, nodes)
		sessions[t.session] = append(sessions[t.session], t)
		sessionOfTurn[key] = t.session
	}
	// Each nested agent's session: a child of the session its parent span
	// is in.
	parentOf := map[string]string{}
	childOf := map[string]string{} // nested agent key → its session
	var sessionOf func(key string) string
	sessionOf = func(key string) string {
		o := owner[key]
		if o == "" {
			return sessionOfTurn[turnOf[key]]
		}
		if id, ok := childOf[o]; ok {
			return id
		}
		parent := sessionOf(nodes[o].parentKey)
		sum := sha256.Sum256([]byte(parent + "/" + o))
		id := IDPrefix + hex.EncodeToString(sum[:16])
		childOf[o], parentOf[id] = id, parent
		return id
	}
	for o, members := range nested {
		t := newTurn(o, members, nodes)
		t.session = sessionOf(o)
		sessions[t.session] = append(sessions[t.session], t)
	}
	depth := func(id string) int {
		d := 0
		for ; parentOf[id] != ""; d++ {
			id = parentOf[id]
		}
		return d
	}
	ids := make([]string, 0, len(sessions))
	for id := range sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { // parents before their children
		if di, dj := depth(ids[i]), depth(ids[j]); di != dj {
			return di < dj
		}
		return ids[i] < ids[j]
	})
	logs := make([]Log, 0, len(ids))
	at := map[string]int{}
	for _, id := range ids {
		l, err := buildLog(id, sessions[id])
		if err != nil {
			return nil, err
		}
		if p := parentOf[id]; p != "" {
			l.Header.ParentSession, l.Header.Origin = p, "subagent"
		}
		at[id] = len(logs)
		logs = append(logs, l)
	}
	// Each subagent's link: the nearest tool span above its invoke_agent
	// whose call is in the parent's log (parents come first).
	for o, id := range childOf {
		p, ok := at[parentOf[id]]
		if !ok {
			continue
		}
		parent := logs[p]
		n := nodes[nodes[o].parentKey]
		if n == nil {
			continue
		}
		ancestors(n, nodes, func(a *node) {
			if logs[at[id]].Link != nil || !a.isTool() {
				return
			}
			if ref, ok := parent.calls[a.key]; ok {
				logs[at[id]].Link = &Link{Parent: parent.Header.ID, CallID: ref.id, AtSeq: ref.seq}
			}
		})
	}
	return logs, nil
}

// ownerOf returns the key of the nested invoke_agent span a span belongs to
// (its nearest invoke_agent, itself included, when another invoke_agent is
// above that one), or "".
func ownerOf(n *node, nodes map[string]*node) string {
	var agents []*node
	ancestors(n, nodes, func(a *node) {
		if a.op == OpInvokeAgent {
			agents = append(agents, a)
		}
	})
	if len(agents) >= 2 {
		return agents[0].key
	}
	return ""
}

func newNode(s Span) *node {
	a := attrsOf(s.Span.GetAttributes())
	n := &node{Span: s, a: a,
		trace:  hex.EncodeToString(s.Span.TraceId),
		id:     hex.EncodeToString(s.Span.SpanId),
		parent: hex.EncodeToString(s.Span.ParentSpanId),
		op:     operation(s.Span, a),
		start:  int64(s.Span.StartTimeUnixNano / 1e6),
		end:    int64(s.Span.EndTimeUnixNano / 1e6),
	}
	n.key = n.trace + "/" + n.id
	if n.parent != "" {
		n.parentKey = n.trace + "/" + n.parent
	}
	if n.end > maxSafe {
		n.end = maxSafe
	}
	return n
}

// preferred picks one of two spans with the same ids independently of their
// order: the smaller encoding.
func preferred(n, old *node) bool {
	a, _ := marshalSpan(n.Span.Span)
	b, _ := marshalSpan(old.Span.Span)
	if c := bytes.Compare(a, b); c != 0 {
		return c < 0
	}
	return n.Service < old.Service
}

func sortedNodes(nodes map[string]*node) []*node {
	out := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// less orders spans by start time, then end time, then key.
func less(a, b *node) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	if a.end != b.end {
		return a.end < b.end
	}
	return a.key < b.key
}

// maxDepth bounds a walk up the span tree: a deeper span is read as if
// its ancestor at that depth were a root, so a hostile chain of spans costs
// linear time, not quadratic.
const maxDepth = 64

// ancestors calls fn for n and each known ancestor, nearest first, and
// returns the key of the missing parent the chain stops at ("" at a root).
// A cycle, or maxDepth, stops the walk.
func ancestors(n *node, nodes map[string]*node, fn func(*node)) string {
	seen := map[string]bool{}
	for depth := 0; ; depth++ {
		fn(n)
		seen[n.key] = true
		if n.parentKey == "" || depth == maxDepth {
			return ""
		}
		p, ok := nodes[n.parentKey]
		if !ok {
			return n.parentKey
		}
		if seen[p.key] {
			return ""
		}
		n = p
	}
}

func turnKey(n *node, nodes map[string]*node) string {
	var agent, top *node
	missing := ancestors(n, nodes, func(a *node) {
		if a.op == OpInvokeAgent {
			agent = a
		}
		top = a
	})
	switch {
	case agent != nil:
		return agent.key
	case missing != "":
		return missing
	}
	return top.key
}

// turn is one turn of a session: its spans, and what it derives from them.
type turn struct {
	key     string
	root    *node // the span the turn is keyed by; nil while it has not arrived
	members []*node
	start   int64
	session string
	trace   string
}

func newTurn(key string, members []*node, nodes map[string]*node) *turn {
	t := &turn{key: key, members: members, root: nodes[key]}
	t.trace, _, _ = strings.Cut(key, "/")
	// The turn's time is its first inference or tool span's start, not its
	// root's: the root ends last, and a time that moved when it arrives
	// would rewrite the log instead of extending it.
	t.start = members[0].start
	for _, m := range members {
		if m.isInference() || m.isTool() {
			t.start = m.start
			break
		}
	}
	// The conversation: the one a member nearest to the turn's top inherits
	// (from itself or its nearest ancestor that has one); members are in
	// start order, so ties go to the earliest.
	best, bestDepth := "", 0
	for _, m := range members {
		depth, conv := 0, ""
		ancestors(m, nodes, func(a *node) {
			depth++
			if conv == "" {
				conv = a.a.str(AttrConversationID)
			}
		})
		if conv != "" && (best == "" || depth < bestDepth) {
			best, bestDepth = conv, depth
		}
	}
	if best != "" {
		t.session = ConversationSessionID(best)
	} else {
		t.session = IDPrefix + t.trace
	}
	return t
}

var plainID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ConversationSessionID returns the session id of a conversation id:
// IDPrefix plus the id when it is a plain token (letters, digits, dot,
// underscore, dash; at most 64), else IDPrefix plus the first 16 bytes of
// its SHA-256 in hex. A plain id that begins with IDPrefix already is kept
// as it is, so a session Export wrote comes back under its own id.
func ConversationSessionID(conv string) string {
	if strings.HasPrefix(conv, IDPrefix) && plainID.MatchString(conv) {
		return conv // already namespaced: a session prism exported (Export)
	}
	if plainID.MatchString(conv) {
		return IDPrefix + conv
	}
	sum := sha256.Sum256([]byte(conv))
	return IDPrefix + hex.EncodeToString(sum[:16])
}

// marshalSpan is the span's protobuf encoding, deterministic.
func marshalSpan(s *tracepb.Span) ([]byte, error) {
	b, err := protoMarshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode span: %w", err)
	}
	return b, nil
}
