package core

import (
	"encoding/json"
	"testing"
)

// validShapes are messages and results as core writes them: the fast
// check must pass each (else every import decodes them into maps again).
var validShapes = []struct{ typ, data string }{
	{EventUserMessage, `{"id":"u1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`},
	{EventUserMessage, `{"id":"u1","role":"user","content":[],"source":{"kind":"hook","name":"x"},"extra":[1,{"a":null}]}`},
	{EventAssistantMessage, `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"reasoning","text":"r"},{"type":"text","text":"t"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":1,"outputTokens":2}}`},
	{EventToolResult, `{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"out"}],"isError":false}],"source":{"kind":"tool","callId":"c1"}},"meta":{"k":"v"}}`},
	{EventToolResult, `{"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":true}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"E","code":"X"}}`},
}

// oddShapes must never pass the fast check where the maps refuse them.
var oddShapes = []string{
	`{"id":"","role":"user","content":[],"source":{"kind":"user"}}`,
	`{"ID":"u","role":"user","content":[],"source":{"kind":"user"}}`,
	`{"id":"u","id":"","role":"user","content":[],"source":{"kind":"user"}}`,
	`{"id":"","id":"u","role":"user","content":[],"source":{"kind":"user"}}`,
	`{"id":"u","role":"User","content":[],"source":{"kind":"user"}}`,
	`{"id":"u","Role":"user","content":[],"source":{"kind":"user"}}`,
	`{"id":"u","role":"user","content":[],"source":{"Kind":"user"}}`,
	`{"id":"u","role":"user","content":null,"source":{"kind":"user"}}`,
	`{"id":"u","role":"user","content":{},"source":{"kind":"user"}}`,
	`{"id":"u","role":"user","source":{"kind":"user"}}`,
	`{"id":5,"role":"user","content":[],"source":{"kind":"user"}}`,
	`{"id":"u","role":"user","content":[],"source":"user"}`,
	`{"id":"u","role":"user","content":[],"source":null}`,
	"{\"id\":\"\xff\",\"role\":\"user\",\"content\":[],\"source\":{\"kind\":\"user\"}}",
	`{"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"p"}}}`,
	`{"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"p","model":""}}}`,
	`{"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"tool","provider":"p","model":"m"}}}`,
	`{"message":null}`,
	`{"Message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"p","model":"m"}}}`,
	`{"message":{"id":"r","role":"user","content":[],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[null],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":["x"],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[]}],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"tool-result","content":[]}],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":{}}],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1"}],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[]},{"type":"text"}],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"text","toolCallId":"c1","content":[]}],"source":{"kind":"tool","callId":"c1"}}}`,
	`{"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[]}],"source":{"kind":"tool","callId":""}}}`,
	`[]`,
	`null`,
	`{}`,
}

// TestMessageShapeHoldsOnlyWhereTheMapsDo: the fast check passes core's
// own shapes and never passes what checkMessageShapeMaps refuses.
func TestMessageShapeHoldsOnlyWhereTheMapsDo(t *testing.T) {
	for _, v := range validShapes {
		if !messageShapeHolds(v.typ, []byte(v.data)) {
			t.Errorf("%s %s: the fast check refused a valid shape", v.typ, v.data)
		}
		if err := checkMessageShapeMaps(v.typ, json.RawMessage(v.data), "x"); err != nil {
			t.Errorf("%s %s: %v", v.typ, v.data, err)
		}
	}
	for _, typ := range []string{EventUserMessage, EventAssistantMessage, EventToolResult} {
		for _, d := range oddShapes {
			checkShapeAgrees(t, typ, []byte(d))
		}
	}
}

func checkShapeAgrees(t *testing.T, typ string, data []byte) {
	t.Helper()
	if messageShapeHolds(typ, data) {
		if err := checkMessageShapeMaps(typ, data, "x"); err != nil {
			t.Fatalf("%s %q: the fast check passed what the maps refuse: %v", typ, data, err)
		}
	}
}

// FuzzMessageShapeHolds holds the fast check to the maps' verdict on
// arbitrary data: never true where checkMessageShapeMaps refuses.
func FuzzMessageShapeHolds(f *testing.F) {
	types := []string{EventUserMessage, EventAssistantMessage, EventToolResult}
	for _, v := range validShapes {
		for k, typ := range types {
			if typ == v.typ {
				f.Add(uint8(k), []byte(v.data))
			}
		}
	}
	for i, d := range oddShapes {
		f.Add(uint8(i), []byte(d))
	}
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		checkShapeAgrees(t, types[int(typ)%len(types)], data)
	})
}
