package notes_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"prism/core"
	"prism/core/notes"
)

func ev(seq, at int64, typ, data string) core.Event {
	return core.Event{Type: typ, Seq: seq, Time: at, Data: json.RawMessage(data)}
}

func subCall(seq, at int64, id, desc string) core.Event {
	args, _ := json.Marshal(map[string]any{"description": desc, "prompt": "p"})
	return ev(seq, at, core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":%q,"name":"subagent","arguments":%q}`, id, args))
}

func subResult(seq, at int64, id string) core.Event {
	return ev(seq, at, core.EventToolResult, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"m%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[],"isError":false}],"source":{"kind":"tool","callId":%q}}}`, seq, id, id))
}

// TestInferLinks: a child goes to the call of its label whose time holds
// its creation — two calls of one label each take their own child, a
// child within a call's result window wins over the turn's window, a child
// created before any call or of another label gets nothing.
func TestInferLinks(t *testing.T) {
	parent := []core.Event{
		ev(0, 100, core.EventTurnStart, `{"turn":1}`),
		subCall(1, 110, "a", "same"),
		subCall(2, 111, "b", "same"),
		subResult(3, 150, "a"),
		subResult(4, 200, "b"),
		subCall(5, 210, "c", "late"),
		subResult(6, 220, "c"),
		ev(7, 300, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
	got := notes.InferLinks("p", parent, []notes.ChildFacts{
		{ID: "k1", CreatedAt: 112, Label: "same"},
		{ID: "k2", CreatedAt: 160, Label: "same"},  // only b's window is still open
		{ID: "k3", CreatedAt: 250, Label: "late"},  // after c's result, within its turn
		{ID: "k4", CreatedAt: 50, Label: "same"},   // before any call
		{ID: "k5", CreatedAt: 120, Label: "other"}, // no call of its label
	})
	var lines []string
	for _, in := range got {
		d, err := notes.ParseLink(in.Data)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s@%d→%s inferred=%v", in.CallID, *in.AtSeq, d.Child, d.Inferred))
	}
	if want := "a@1→k1 inferred=true, b@2→k2 inferred=true, c@5→k3 inferred=true"; strings.Join(lines, ", ") != want {
		t.Errorf("links = %s\nwant    %s", strings.Join(lines, ", "), want)
	}
}

// TestLinkChecksItsData: a link note names its child; anything else in
// its data, or no call, is refused with a message saying what is wrong.
func TestLinkChecksItsData(t *testing.T) {
	if _, err := notes.Link("p", "c", 3, notes.LinkData{Child: "k"}); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		call, data, want string
	}{
		"no child":      {"c", `{"background":true}`, "child is empty"},
		"extra field":   {"c", `{"child":"k","colour":"red"}`, "unknown field"},
		"not an object": {"c", `["k"]`, "JSON object"},
		"bad child":     {"c", `{"child":"a\u0000b"}`, "not a session id"},
	} {
		_, _, err := notes.Check(notes.Input{Session: "p", Kind: notes.KindLink, CallID: tc.call, Data: json.RawMessage(tc.data)})
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want INVALID saying %q", name, err, tc.want)
		}
	}
	if _, err := notes.Link("p", "", 3, notes.LinkData{Child: "k"}); err == nil || !strings.Contains(err.Error(), "no spawning call id") {
		t.Errorf("a link without a call = %v", err)
	}
}
