package dsh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"prism/core"
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1

// DecodeHeader parses a header line: {"type":"session","version":0,"id":…,
// "createdAt":…, optional cwd, parentSession, seedLength, origin
// ("subagent"), delegationDepth (absent means 0), agentPreset}. A version
// other than core.SessionFormatVersion and dsh's retired fields sandboxMode
// and approvalPolicy are refused; other unknown keys are ignored, as dsh's
// fromHeaderLine does.
func DecodeHeader(line []byte) (core.SessionHeader, error) {
	var h core.SessionHeader
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil || m == nil {
		return h, fmt.Errorf("first line is not a session header: not a JSON object")
	}
	if string(m["type"]) != `"session"` {
		return h, fmt.Errorf(`first line is not a session header: "type" must be "session"`)
	}
	if _, ok := m["sandboxMode"]; ok {
		return h, fmt.Errorf("session header uses retired policy baseline fields (sandboxMode)")
	}
	if _, ok := m["approvalPolicy"]; ok {
		return h, fmt.Errorf("session header uses retired policy baseline fields (approvalPolicy)")
	}
	v, ok := m["version"]
	if !ok {
		return h, fmt.Errorf(`session header: missing "version"`)
	}
	ver, err := safeUint(v)
	if err != nil {
		return h, fmt.Errorf(`session header: "version" must be a non-negative integer, got %s`, clip(v))
	}
	if ver != core.SessionFormatVersion {
		return h, fmt.Errorf("unsupported session format version %d (prism reads version %d)", ver, core.SessionFormatVersion)
	}
	if err := json.Unmarshal(m["id"], &h.ID); err != nil || h.ID == "" {
		return h, fmt.Errorf(`session header: "id" must be a non-empty string`)
	}
	if h.CreatedAt, err = safeUint(m["createdAt"]); err != nil {
		return h, fmt.Errorf(`session header: "createdAt" must be a non-negative safe integer`)
	}
	str := func(key string, dst *string) error {
		raw, ok := m[key]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil || raw[0] != '"' {
			return fmt.Errorf("session header: %q must be a string", key)
		}
		return nil
	}
	for key, dst := range map[string]*string{"cwd": &h.Cwd, "parentSession": &h.ParentSession, "origin": &h.Origin, "agentPreset": &h.AgentPreset} {
		if err := str(key, dst); err != nil {
			return h, err
		}
	}
	if _, ok := m["origin"]; ok && h.Origin != "subagent" {
		return h, fmt.Errorf(`session header: "origin" must be "subagent"`)
	}
	if raw, ok := m["seedLength"]; ok {
		n, err := safeUint(raw)
		if err != nil {
			return h, fmt.Errorf(`session header: "seedLength" must be a non-negative safe integer`)
		}
		h.SeedLength = &n
	}
	depth := int64(0)
	if raw, ok := m["delegationDepth"]; ok {
		if depth, err = safeUint(raw); err != nil {
			return h, fmt.Errorf(`session header: "delegationDepth" must be a non-negative safe integer`)
		}
	}
	h.DelegationDepth = &depth
	h.Version = int(ver)
	return h, nil
}

// AppendHeader appends h's header line (without newline) to dst, with keys
// in dsh's toHeaderLine order; delegationDepth is always written (0 when
// unset), as dsh requires on disk.
func AppendHeader(dst []byte, h core.SessionHeader) []byte {
	dst = append(dst, `{"type":"session","version":`...)
	dst = strconv.AppendInt(dst, int64(h.Version), 10)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, h.ID)
	dst = append(dst, `,"createdAt":`...)
	dst = strconv.AppendInt(dst, h.CreatedAt, 10)
	if h.Cwd != "" {
		dst = append(dst, `,"cwd":`...)
		dst = appendString(dst, h.Cwd)
	}
	if h.ParentSession != "" {
		dst = append(dst, `,"parentSession":`...)
		dst = appendString(dst, h.ParentSession)
	}
	if h.SeedLength != nil {
		dst = append(dst, `,"seedLength":`...)
		dst = strconv.AppendInt(dst, *h.SeedLength, 10)
	}
	if h.Origin != "" {
		dst = append(dst, `,"origin":`...)
		dst = appendString(dst, h.Origin)
	}
	depth := int64(0)
	if h.DelegationDepth != nil {
		depth = *h.DelegationDepth
	}
	dst = append(dst, `,"delegationDepth":`...)
	dst = strconv.AppendInt(dst, depth, 10)
	if h.AgentPreset != "" {
		dst = append(dst, `,"agentPreset":`...)
		dst = appendString(dst, h.AgentPreset)
	}
	return append(dst, '}')
}

func appendString(dst []byte, s string) []byte {
	b, _ := core.MarshalNoEscape(s) // a string always marshals
	return append(dst, b...)
}

func safeUint(raw json.RawMessage) (int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > maxSafeInteger {
		return 0, fmt.Errorf("not a non-negative safe integer")
	}
	return n, nil
}

func safeInt(raw json.RawMessage) (int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < -maxSafeInteger || n > maxSafeInteger {
		return 0, fmt.Errorf("not a safe integer")
	}
	return n, nil
}

func clip(b []byte) string {
	const max = 60
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Packed chunk row tags (dsh's chunk-rows.ts).
const (
	RowTextChunks      = "text-chunks"
	RowReasoningChunks = "reasoning-chunks"
	RowToolCallChunks  = "tool-call-chunks"
)

var rowTagPrefix = []byte(`-chunks"`)

// DecodeRecord decodes one storage record (a log line after the header): a
// session event as written, or a packed chunk row, which expands into the
// assistant/chunk events it stands for (member k gets seq seq0+k and time
// time0 plus the first k gaps). A malformed row is an error, never dropped.
func DecodeRecord(line []byte) ([]core.Event, error) {
	if bytes.Contains(line, rowTagPrefix) {
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &probe) == nil {
			switch probe.Type {
			case RowTextChunks, RowReasoningChunks, RowToolCallChunks:
				return expandRow(line, probe.Type)
			}
		}
	}
	var e core.Event
	if err := json.Unmarshal(line, &e); err != nil {
		if !json.Valid(line) {
			return nil, fmt.Errorf("not valid JSON")
		}
		return nil, err
	}
	return []core.Event{e}, nil
}

func exactKeys(m map[string]json.RawMessage, keys ...string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func isNumber(raw json.RawMessage) bool {
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return false
	}
	return core.CheckJSON(raw) == nil
}

func expandRow(line []byte, tag string) ([]core.Event, error) {
	bad := func(why string) ([]core.Event, error) {
		return nil, fmt.Errorf("malformed %s storage row: %s", tag, why)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(line, &env); err != nil {
		return bad("not a JSON object")
	}
	if !exactKeys(env, "type", "seq0", "time0", "data") {
		return bad("envelope must be exactly {type, seq0, time0, data}")
	}
	seq0, err := safeUint(env["seq0"])
	if err != nil {
		return bad("seq0 must be a non-negative safe integer")
	}
	time0, err := safeInt(env["time0"])
	if err != nil {
		return bad("time0 must be a safe integer")
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(env["data"], &data); err != nil || data == nil {
		return bad("data must be an object")
	}
	payloadKey := "texts"
	withName := false
	if tag == RowToolCallChunks {
		payloadKey = "args"
		withName = exactKeys(data, "turn", "step", "index", "id", "name", "dt", "args")
		if !withName && !exactKeys(data, "turn", "step", "index", "id", "dt", "args") {
			return bad("data must be exactly {turn, step, index, id, name?, dt, args}")
		}
		if len(data["id"]) == 0 || data["id"][0] != '"' || withName && data["name"][0] != '"' {
			return bad("id (and name when present) must be strings")
		}
	} else if !exactKeys(data, "turn", "step", "index", "dt", "texts") {
		return bad("data must be exactly {turn, step, index, dt, texts}")
	}
	if !isNumber(data["turn"]) || !isNumber(data["step"]) || !isNumber(data["index"]) {
		return bad("turn/step/index must be numbers")
	}
	var members []json.RawMessage
	if err := json.Unmarshal(data[payloadKey], &members); err != nil || len(members) == 0 {
		return bad(payloadKey + " must be a non-empty string array")
	}
	for _, m := range members {
		if len(m) == 0 || m[0] != '"' {
			return bad(payloadKey + " must be a non-empty string array")
		}
	}
	var dts []json.RawMessage
	if err := json.Unmarshal(data["dt"], &dts); err != nil {
		return bad("dt must be an array of safe integers")
	}
	gaps := make([]int64, len(dts))
	for i, d := range dts {
		if gaps[i], err = safeInt(d); err != nil {
			return bad("dt must be an array of safe integers")
		}
	}
	if len(gaps) != len(members)-1 {
		return bad(fmt.Sprintf("dt length %d does not match %d members", len(gaps), len(members)))
	}
	if seq0+int64(len(members))-1 > maxSafeInteger {
		return bad("member seqs must stay safe integers")
	}
	var prefix, mid []byte // data up to the member, then the key of the member
	prefix = append(prefix, `{"turn":`...)
	prefix = append(prefix, data["turn"]...)
	prefix = append(prefix, `,"step":`...)
	prefix = append(prefix, data["step"]...)
	switch tag {
	case RowTextChunks:
		prefix = append(prefix, `,"chunk":{"type":"text-delta","index":`...)
		prefix = append(prefix, data["index"]...)
		mid = []byte(`,"text":`)
	case RowReasoningChunks:
		prefix = append(prefix, `,"chunk":{"type":"reasoning-delta","index":`...)
		prefix = append(prefix, data["index"]...)
		mid = []byte(`,"text":`)
	default:
		prefix = append(prefix, `,"chunk":{"type":"tool-call-delta","index":`...)
		prefix = append(prefix, data["index"]...)
		prefix = append(prefix, `,"id":`...)
		prefix = append(prefix, data["id"]...)
		if withName {
			prefix = append(prefix, `,"name":`...)
			prefix = append(prefix, data["name"]...)
		}
		mid = []byte(`,"argumentsDelta":`)
	}
	events := make([]core.Event, len(members))
	t := time0
	for k, m := range members {
		if k > 0 {
			t += gaps[k-1]
			if t > maxSafeInteger || t < -maxSafeInteger {
				return bad("member times must stay safe integers")
			}
		}
		d := make([]byte, 0, len(prefix)+len(mid)+len(m)+2)
		d = append(d, prefix...)
		d = append(d, mid...)
		d = append(d, m...)
		d = append(d, "}}"...)
		if err := core.CheckJSON(d); err != nil {
			return bad(err.Error())
		}
		events[k] = core.Event{Type: core.EventAssistantChunk, Seq: seq0 + int64(k), Time: t, Data: d}
	}
	return events, nil
}

// AppendEvent appends e's JSONL line (without newline) to dst.
func AppendEvent(dst []byte, e core.Event) ([]byte, error) {
	b, err := e.MarshalJSON()
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}
