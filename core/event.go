package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Event types of the core vocabulary.
const (
	EventTurnStart        = "turn/start"
	EventTurnEnd          = "turn/end"
	EventStepStart        = "step/start"
	EventStepEnd          = "step/end"
	EventUserMessage      = "user/message"
	EventAssistantChunk   = "assistant/chunk"
	EventAssistantMessage = "assistant/message"
	EventToolCall         = "tool/call"
	EventToolResult       = "tool/result"
	EventTodoWrite        = "todo/write"
	EventRequestHeader    = "request/header"
	EventRequestContext   = "request/context"
	EventSessionEndSeed   = "session/end-seed"
	EventSessionTitle     = "session/title"
	EventApprovalAsked    = "approval/asked"
	EventApprovalDecided  = "approval/decided"
	EventApprovalPolicy   = "approval/policy"
	EventInboxSpliced     = "agent/inbox/spliced"
	EventCodeDispatch     = "tool/code-dispatch"
	EventCodeDispatchOpen = "tool/code-dispatch-start"
	EventSubagentDescr    = "subagent/descriptor"
)

// knownEventTypes is the event vocabulary this build understands: dsh's
// KNOWN_SESSION_EVENT_TYPES (both the compact/* and compaction/* spellings
// seen across dsh versions) plus the experimental team/* events.
var knownEventTypes = map[string]bool{
	"agent-preset/selected": true, "agent/inbox/spliced": true,
	"approval/asked": true, "approval/decided": true, "approval/policy": true,
	"assistant/chunk": true, "assistant/message": true,
	"command/done": true, "command/run": true,
	"compact/end": true, "compact/prune": true, "compact/start": true, "compact/summary": true,
	"compaction/end": true, "compaction/prune": true, "compaction/start": true, "compaction/summary": true,
	"feedback/record": true, "goal/change": true, "hook/invoked": true, "hook/result": true,
	"llm/retry": true, "llm/retry-started": true, "permission/preset": true, "plan/mode": true,
	"request/context": true, "request/header": true, "sandbox/mode": true, "schedule/change": true,
	"session/end-seed": true, "session/title": true, "session/title-llm-request": true,
	"step/end": true, "step/start": true, "subagent/descriptor": true,
	"team/member": true, "team/task": true, "team/message/queued": true, "team/message/delivered": true,
	"todo/write":              true,
	"tool-workflow/agent-end": true, "tool-workflow/agent-start": true,
	"tool-workflow/run-end": true, "tool-workflow/run-start": true,
	"tool/call": true, "tool/code-dispatch": true, "tool/code-dispatch-start": true, "tool/result": true,
	"turn/end": true, "turn/start": true, "user/message": true,
	"web/deepseek-search-llm-request": true,
}

// IsKnownEventType reports whether typ belongs to the vocabulary prism
// understands. A reader must refuse to interpret a log holding an unknown
// type that is not marked ignorable (it can still display it raw).
func IsKnownEventType(typ string) bool { return knownEventTypes[typ] }

// IsSurfaceType reports whether typ is a surface (model-transcript) type:
// user/message, assistant/message or tool/result.
func IsSurfaceType(typ string) bool {
	return typ == EventUserMessage || typ == EventAssistantMessage || typ == EventToolResult
}

// Event is one entry of a session log, in dsh's envelope. Data is kept as
// the exact JSON the event was appended or imported with.
type Event struct {
	Type            string
	Seq             int64
	Time            int64 // epoch milliseconds; may go backwards, order by Seq
	Data            json.RawMessage
	Ignorable       bool       // an unknown type may be skipped only if set
	SurfaceOp       *SurfaceOp // surface types only (and then required)
	SourceEventSeqs []int64    // surface types only; nil = absent, empty = []
}

// SurfaceOp says how a surface event changes the model transcript: it is
// appended, or it replaces the surface range Start..End (by seq).
type SurfaceOp struct {
	Replace    bool
	Start, End int64
}

// AppendOp returns a new surfaceOp of an ordinary surface event ("append").
func AppendOp() *SurfaceOp { return &SurfaceOp{} }

// IsAppendOrigin reports whether e is an append-origin surface event: the
// events a human transcript shows (replacements are model-only).
func (e *Event) IsAppendOrigin() bool {
	return e.SurfaceOp != nil && !e.SurfaceOp.Replace
}

// MarshalJSON writes {"op":"replace","start":…,"end":…} or "append".
func (op SurfaceOp) MarshalJSON() ([]byte, error) {
	if !op.Replace {
		return []byte(`"append"`), nil
	}
	return []byte(`{"op":"replace","start":` + strconv.FormatInt(op.Start, 10) +
		`,"end":` + strconv.FormatInt(op.End, 10) + `}`), nil
}

// UnmarshalJSON accepts "append" or {"op":"replace","start":n,"end":n}.
func (op *SurfaceOp) UnmarshalJSON(data []byte) error {
	if string(data) == `"append"` {
		*op = SurfaceOp{}
		return nil
	}
	var r struct {
		Op    string `json:"op"`
		Start *int64 `json:"start"`
		End   *int64 `json:"end"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Op != "replace" || r.Start == nil || r.End == nil {
		return fmt.Errorf(`surfaceOp must be "append" or {"op":"replace","start":n,"end":n}, got %s`, truncateForError(data))
	}
	*op = SurfaceOp{Replace: true, Start: *r.Start, End: *r.End}
	return nil
}

// MarshalJSON writes the envelope with keys in dsh's order: type, seq, time,
// data, then ignorable, surfaceOp and sourceEventSeqs when present.
func (e Event) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := e.appendJSON(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (e *Event) appendJSON(buf *bytes.Buffer) error {
	buf.Grow(len(e.Data) + len(e.Type) + 64)
	buf.WriteString(`{"type":`)
	t, err := MarshalNoEscape(e.Type)
	if err != nil {
		return err
	}
	buf.Write(t)
	buf.WriteString(`,"seq":`)
	buf.WriteString(strconv.FormatInt(e.Seq, 10))
	buf.WriteString(`,"time":`)
	buf.WriteString(strconv.FormatInt(e.Time, 10))
	buf.WriteString(`,"data":`)
	if len(e.Data) == 0 {
		return fmt.Errorf("event %d (%s) has no data", e.Seq, e.Type)
	}
	buf.Write(e.Data)
	if e.Ignorable {
		buf.WriteString(`,"ignorable":true`)
	}
	if e.SurfaceOp != nil {
		op, _ := e.SurfaceOp.MarshalJSON()
		buf.WriteString(`,"surfaceOp":`)
		buf.Write(op)
	}
	if e.SourceEventSeqs != nil {
		buf.WriteString(`,"sourceEventSeqs":[`)
		for i, s := range e.SourceEventSeqs {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.FormatInt(s, 10))
		}
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
	return nil
}

// UnmarshalJSON decodes a strict envelope: the required keys type, seq, time
// and data must be present, and no other keys are allowed (dsh's
// assertSessionEventEnvelope). data must be lossless JSON.
func (e *Event) UnmarshalJSON(data []byte) error {
	var raw struct {
		Type            *string         `json:"type"`
		Seq             *json.Number    `json:"seq"`
		Time            *json.Number    `json:"time"`
		Data            json.RawMessage `json:"data"`
		Ignorable       *bool           `json:"ignorable"`
		SurfaceOp       *SurfaceOp      `json:"surfaceOp"`
		SourceEventSeqs *[]int64        `json:"sourceEventSeqs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("event envelope: %w", err)
	}
	switch {
	case raw.Type == nil || *raw.Type == "":
		return fmt.Errorf(`event envelope: missing "type"`)
	case raw.Seq == nil:
		return fmt.Errorf(`event envelope: missing "seq"`)
	case raw.Time == nil:
		return fmt.Errorf(`event envelope: missing "time"`)
	case len(raw.Data) == 0:
		return fmt.Errorf(`event envelope: missing "data"`)
	}
	seq, err := safeInt(*raw.Seq)
	if err != nil || seq < 0 {
		return fmt.Errorf(`event envelope: "seq" must be a non-negative safe integer, got %s`, raw.Seq.String())
	}
	tm, err := safeInt(*raw.Time)
	if err != nil {
		return fmt.Errorf(`event envelope: "time" must be a safe integer, got %s`, raw.Time.String())
	}
	if raw.Ignorable != nil && !*raw.Ignorable {
		return fmt.Errorf(`event envelope: "ignorable" must be true when present`)
	}
	d, err := compact(raw.Data)
	if err != nil {
		return fmt.Errorf("event %d data: %w", seq, err)
	}
	if err := checkNumbers(d); err != nil {
		return fmt.Errorf("event %d data: %w", seq, err)
	}
	*e = Event{Type: *raw.Type, Seq: seq, Time: tm, Data: d, SurfaceOp: raw.SurfaceOp}
	if raw.Ignorable != nil {
		e.Ignorable = true
	}
	if raw.SourceEventSeqs != nil {
		e.SourceEventSeqs = *raw.SourceEventSeqs
		if e.SourceEventSeqs == nil {
			return fmt.Errorf(`event %d: "sourceEventSeqs" must be an array`, seq)
		}
	}
	return nil
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

// IsSafeInteger reports whether n is one of JavaScript's safe integers
// (±(2^53−1)): the range of every number in a session log — an event's
// seq and time (milliseconds) included — so a float64 holds it exactly.
func IsSafeInteger(n int64) bool { return n <= maxSafeInteger && n >= -maxSafeInteger }

func safeInt(n json.Number) (int64, error) {
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, err
	}
	if i > maxSafeInteger || i < -maxSafeInteger {
		return 0, fmt.Errorf("%d is not a safe integer", i)
	}
	return i, nil
}

func truncateForError(b []byte) string {
	const max = 80
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// DecodeData decodes e.Data into v.
func (e *Event) DecodeData(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	return nil
}

// SessionFormatVersion is dsh's SESSION_FORMAT_VERSION, the only header
// version prism reads.
const SessionFormatVersion = 0

// SessionHeader is a session's metadata line, dsh's SessionHeader. On disk
// (JSONL) it is written as {"type":"session", …header fields}.
type SessionHeader struct {
	Version         int    `json:"version"`
	ID              string `json:"id"`
	CreatedAt       int64  `json:"createdAt"`
	Cwd             string `json:"cwd,omitempty"`
	ParentSession   string `json:"parentSession,omitempty"`
	SeedLength      *int64 `json:"seedLength,omitempty"`
	Origin          string `json:"origin,omitempty"`
	DelegationDepth *int64 `json:"delegationDepth,omitempty"`
	AgentPreset     string `json:"agentPreset,omitempty"`
}

// OriginSubagent is the Origin of a child session: one a subagent call of
// its ParentSession started (dsh-spec §7.1).
const OriginSubagent = "subagent"

// ChildOf returns the session h is a subagent child of: its ParentSession
// when its Origin is OriginSubagent, else "". A fork also names its source
// in ParentSession (with SeedLength) but is no child: it is listed on its
// own, outlives its source and imports without it. This is the one mark of
// a child (lists, cascade delete, retention, import's orphan refusal).
func (h SessionHeader) ChildOf() string {
	if h.Origin != OriginSubagent {
		return ""
	}
	return h.ParentSession
}
