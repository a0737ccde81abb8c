package core

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// ValidateLog checks a loaded log the way dsh validates a session seed
// (Session constructor, assertSessionEventEnvelope, assertMessageEventShape):
// the header is valid (see validateHeader); every event has a valid envelope
// and lossless data; request/header and message events are well formed;
// legacy request/header-delta events and the request/header reason
// "fallback" are refused; seq equals the event's index; no event has an
// unknown type without the ignorable marker; and every event passes the same
// surface transition as a live append. The error is a *Error with
// CodeInvalid whose text names the offending index (= seq) and the reason,
// worded as dsh words it.
func ValidateLog(h SessionHeader, events []Event) error {
	return validateLog(h, events, false)
}

// ValidateDecodedLog is ValidateLog for events whose data the caller
// decoded with Event's own decoder (Event.UnmarshalJSON, which refuses data
// that is not lossless JSON) or checked with CheckJSON: it does not scan
// their data for that again. Every other check is ValidateLog's.
func ValidateDecodedLog(h SessionHeader, events []Event) error {
	return validateLog(h, events, true)
}

func validateLog(h SessionHeader, events []Event, dataChecked bool) error {
	if err := validateHeader(h); err != nil {
		return err
	}
	var surf surface
	for i := range events {
		ev := &events[i]
		if err := validateSeedEvent(ev, i, dataChecked); err != nil {
			return err
		}
		p, err := surf.plan(ev, logView{head: events[:i]})
		if err != nil {
			return Errorf(CodeInvalid, "invalid seed event at index %d: %w", i, err)
		}
		surf.apply(p)
	}
	return nil
}

// validateSeedEvent runs the event-local seed checks, in dsh's order;
// dataChecked skips the lossless-JSON check of data already checked.
func validateSeedEvent(ev *Event, i int, dataChecked bool) error {
	if len(ev.Data) > 0 && !dataChecked {
		if err := CheckJSON(ev.Data); err != nil {
			return Errorf(CodeInvalid, "seed event at index %d is not losslessly JSON-serializable: %w", i, err)
		}
	}
	if ev.Type == "request/header-delta" {
		return Errorf(CodeInvalid, "seed event at index %d uses unsupported legacy request/header-delta format", i)
	}
	if ev.Type == "" || !isEventSeq(ev.Seq) || ev.Time > maxSafeInteger || ev.Time < -maxSafeInteger || len(ev.Data) == 0 {
		return Errorf(CodeInvalid, "seed event at index %d has an invalid event envelope", i)
	}
	if err := checkEventShape(ev.Type, ev.Data, fmt.Sprintf("seed %s at index %d", ev.Type, i)); err != nil {
		return Errorf(CodeInvalid, "%w", err)
	}
	if err := checkSupportedRequestHeader(ev.Type, ev.Data, fmt.Sprintf("seed event at index %d", i)); err != nil {
		return Errorf(CodeInvalid, "%w", err)
	}
	if ev.Seq != int64(i) {
		return Errorf(CodeInvalid, "seed event at index %d has seq %d (expected %d); seed must be contiguous from 0", i, ev.Seq, i)
	}
	if !IsKnownEventType(ev.Type) && !ev.Ignorable {
		return Errorf(CodeInvalid, "seed event at index %d has unknown required session event type %q", i, ev.Type)
	}
	return nil
}

// validateHeader checks a session header as dsh's validateSessionHeader
// does, except that the id is required to be non-empty rather than equal to
// a separately supplied id.
func validateHeader(h SessionHeader) error {
	switch {
	case h.Version != SessionFormatVersion:
		return Errorf(CodeInvalid, "session header version must be %d, got %d", SessionFormatVersion, h.Version)
	case h.ID == "":
		return Errorf(CodeInvalid, "session header id must be a non-empty string")
	case h.CreatedAt < 0 || h.CreatedAt > maxSafeInteger:
		return Errorf(CodeInvalid, "session header createdAt must be a non-negative safe integer")
	case h.Cwd != "" && !filepath.IsAbs(h.Cwd):
		return Errorf(CodeInvalid, "session header cwd must be an absolute path, got %q", h.Cwd)
	case h.SeedLength != nil && (*h.SeedLength < 0 || *h.SeedLength > maxSafeInteger):
		return Errorf(CodeInvalid, "session header seedLength must be a non-negative safe integer")
	case h.Origin != "" && h.Origin != "subagent":
		return Errorf(CodeInvalid, `session header origin must be "subagent"`)
	case h.DelegationDepth != nil && (*h.DelegationDepth < 0 || *h.DelegationDepth > maxSafeInteger):
		return Errorf(CodeInvalid, "session header delegationDepth must be a non-negative safe integer")
	}
	return nil
}

// checkSupportedRequestHeader refuses the request-header vocabulary dsh
// removed with its legacy delta codec (assertSupportedRequestHeader).
func checkSupportedRequestHeader(typ string, data json.RawMessage, location string) error {
	if typ == "request/header-delta" {
		return fmt.Errorf("%s uses unsupported legacy request/header-delta format", location)
	}
	if typ == EventRequestHeader {
		var d struct {
			Reason json.RawMessage `json:"reason"`
		}
		if json.Unmarshal(data, &d) == nil && string(d.Reason) == `"fallback"` {
			return fmt.Errorf(`%s uses unsupported legacy request/header reason "fallback"`, location)
		}
	}
	return nil
}

// checkEventShape validates what must hold to replay a request/header or a
// message event (dsh's assertCurrentLlmShape and assertMessageEventShape).
// subject prefixes the error text, e.g. `seed tool/result at index 4`.
func checkEventShape(typ string, data json.RawMessage, subject string) error {
	switch typ {
	case EventRequestHeader:
		return checkRequestHeaderShape(data, subject)
	case EventUserMessage, EventAssistantMessage, EventToolResult:
		return checkMessageShape(typ, data, subject)
	}
	return nil
}

func checkRequestHeaderShape(data json.RawMessage, subject string) error {
	var d struct {
		Header json.RawMessage `json:"header"`
	}
	_ = json.Unmarshal(data, &d)
	var header map[string]any
	_ = json.Unmarshal(d.Header, &header)
	config, _ := header["config"].(map[string]any)
	if !hasProviderModel(config) {
		return fmt.Errorf("%s lacks provider/model", subject)
	}
	if effort, ok := config["reasoningEffort"]; ok {
		if s, isString := effort.(string); !isString || s == "" {
			return fmt.Errorf("%s has an invalid reasoningEffort", subject)
		}
	}
	raw, ok := header["adapterDefaults"]
	if !ok {
		return nil
	}
	defaults, isObject := raw.(map[string]any)
	if !isObject {
		return fmt.Errorf("%s has invalid adapterDefaults", subject)
	}
	for key, marker := range defaults {
		if (key != "reasoningEffort" && key != "maxTokens") || marker != true {
			return fmt.Errorf("%s has invalid adapterDefaults", subject)
		}
		if _, set := config[key]; !set {
			return fmt.Errorf("%s has invalid adapterDefaults", subject)
		}
	}
	return nil
}

func checkMessageShape(typ string, data json.RawMessage, subject string) error {
	if messageShapeHolds(typ, data) {
		return nil
	}
	return checkMessageShapeMaps(typ, data, subject)
}

// checkMessageShapeMaps is checkMessageShape on the data decoded into maps
// of interfaces, as dsh reads it: the verdict and error text of record.
func checkMessageShapeMaps(typ string, data json.RawMessage, subject string) error {
	var record map[string]any
	_ = json.Unmarshal(data, &record)
	msg := record
	if typ != EventUserMessage {
		msg, _ = record["message"].(map[string]any)
	}
	if id, _ := msg["id"].(string); id == "" {
		return fmt.Errorf("%s lacks an identified message", subject)
	}
	role := RoleUser
	if typ == EventAssistantMessage {
		role = RoleAssistant
	}
	if msg["role"] != role {
		return fmt.Errorf("%s message must have role %q", subject, role)
	}
	source, _ := msg["source"].(map[string]any)
	if kind, _ := source["kind"].(string); kind == "" {
		return fmt.Errorf("%s message has invalid source", subject)
	}
	content, isArray := msg["content"].([]any)
	if !isArray {
		return fmt.Errorf("%s message has invalid content", subject)
	}
	switch typ {
	case EventAssistantMessage:
		if source["kind"] != SourceModel || !hasProviderModel(source) {
			return fmt.Errorf("%s message must have model source", subject)
		}
	case EventToolResult:
		callID, _ := source["callId"].(string)
		if source["kind"] != SourceTool || callID == "" {
			return fmt.Errorf("%s message must have tool source", subject)
		}
		var block map[string]any
		if len(content) == 1 {
			block, _ = content[0].(map[string]any)
		}
		if _, blockContent := block["content"].([]any); block == nil || block["type"] != BlockToolResult || !blockContent {
			return fmt.Errorf("%s message must contain one tool-result block", subject)
		}
		if block["toolCallId"] != callID {
			return fmt.Errorf("%s message has mismatched tool call ids", subject)
		}
	}
	return nil
}

// checkTypedShape is checkMessageShape on typed event data: the same
// checks in the same order, read from the Go value instead of decoding its
// encoding. ok is false when data is not a type it knows (a
// json.RawMessage, a map, an unknown block kind), and the caller must
// check the encoding instead.
func checkTypedShape(typ string, data any, subject func() string) (ok bool, err error) {
	var msg *Message
	switch d := data.(type) {
	case Message:
		if typ == EventUserMessage {
			msg = &d
		}
	case *Message:
		if typ == EventUserMessage && d != nil {
			msg = d
		}
	case AssistantMessage:
		if typ == EventAssistantMessage {
			msg = &d.Message
		}
	case *AssistantMessage:
		if typ == EventAssistantMessage && d != nil {
			msg = &d.Message
		}
	case ToolResultData:
		if typ == EventToolResult {
			msg = &d.Message
		}
	case *ToolResultData:
		if typ == EventToolResult && d != nil {
			msg = &d.Message
		}
	}
	if msg == nil {
		return false, nil
	}
	for _, b := range msg.Content {
		if _, unknown := b.(*UnknownBlock); unknown {
			return false, nil // its JSON is whatever Raw holds
		}
	}
	if msg.ID == "" {
		return true, fmt.Errorf("%s lacks an identified message", subject())
	}
	role := RoleUser
	if typ == EventAssistantMessage {
		role = RoleAssistant
	}
	if msg.Role != role {
		return true, fmt.Errorf("%s message must have role %q", subject(), role)
	}
	src := &msg.Source
	if src.Kind == "" {
		return true, fmt.Errorf("%s message has invalid source", subject())
	}
	// Content always encodes as an array.
	switch typ {
	case EventAssistantMessage:
		if src.Kind != SourceModel || src.Provider == "" || src.Model == "" {
			return true, fmt.Errorf("%s message must have model source", subject())
		}
	case EventToolResult:
		if src.Kind != SourceTool || src.CallID == "" {
			return true, fmt.Errorf("%s message must have tool source", subject())
		}
		var block *ToolResultBlock
		if len(msg.Content) == 1 {
			block, _ = msg.Content[0].(*ToolResultBlock)
		}
		if block == nil { // its content always encodes as an array
			return true, fmt.Errorf("%s message must contain one tool-result block", subject())
		}
		if block.ToolCallID != src.CallID {
			return true, fmt.Errorf("%s message has mismatched tool call ids", subject())
		}
	}
	return true, nil
}

// hasProviderModel reports whether v carries non-empty provider and model strings.
func hasProviderModel(v map[string]any) bool {
	p, _ := v["provider"].(string)
	m, _ := v["model"].(string)
	return p != "" && m != ""
}
