package codex_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"prism/core"
	"prism/sources/codex"
)

// TestRequestPermissionsAwaits decodes a request_permissions call without
// its output: the call is followed by approval/asked and nothing decides it,
// so the card shows as awaiting. When the output lands, approval/decided
// (allowed-once) comes before the result.
func TestRequestPermissionsAwaits(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "permission.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := codex.Decode(bytes.NewReader(text), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, r)
	var types []string
	for _, e := range r.Events {
		types = append(types, e.Type)
	}
	want := []string{core.EventTurnStart, core.EventRequestContext, core.EventUserMessage, core.EventStepStart,
		core.EventAssistantMessage, core.EventToolCall, core.EventApprovalAsked}
	if !equal(types, want) {
		t.Fatalf("waiting: types %v, want %v", types, want)
	}
	var asked core.ApprovalAsked
	if err := json.Unmarshal(r.Events[6].Data, &asked); err != nil {
		t.Fatal(err)
	}
	if asked.CallID != "call_P" || asked.ToolName != codex.ToolRequestPermissions || asked.ID == "" {
		t.Errorf("approval/asked = %+v", asked)
	}

	answered := append(append([]byte{}, text...), []byte(
		`{"timestamp":"2026-05-02T09:00:09.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_P","output":"granted"}}`+"\n"+
			`{"timestamp":"2026-05-02T09:00:10.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"turn-1"}}`+"\n")...)
	r, err = codex.Decode(bytes.NewReader(answered), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, r)
	types = types[:0]
	for _, e := range r.Events {
		types = append(types, e.Type)
	}
	want = []string{core.EventTurnStart, core.EventRequestContext, core.EventUserMessage, core.EventStepStart,
		core.EventAssistantMessage, core.EventToolCall, core.EventApprovalAsked, core.EventApprovalDecided, core.EventToolResult, core.EventStepEnd, core.EventTurnEnd}
	if !equal(types, want) {
		t.Fatalf("answered: types %v, want %v", types, want)
	}
	var decided core.ApprovalDecided
	if err := json.Unmarshal(r.Events[7].Data, &decided); err != nil {
		t.Fatal(err)
	}
	if decided.ID != asked.ID || decided.Outcome != core.ApprovalAllowedOnce {
		t.Errorf("approval/decided = %+v, want id %s allowed-once", decided, asked.ID)
	}

	// A turn that ends without the answer decides it cancelled, then the
	// call's synthetic result.
	ended := append(append([]byte{}, text...), []byte(
		`{"timestamp":"2026-05-02T09:00:10.000Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"turn-1","reason":"interrupted"}}`+"\n")...)
	r, err = codex.Decode(bytes.NewReader(ended), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, r)
	if e := r.Events[7]; e.Type != core.EventApprovalDecided || !bytes.Contains(e.Data, []byte(`"cancelled"`)) {
		t.Errorf("aborted: seq 7 = %s %s, want approval/decided cancelled", e.Type, e.Data)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
