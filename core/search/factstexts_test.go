package search_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"prism/core"
	"prism/core/search"
	"prism/store/storetest"
)

// twoDecodes is what an import computed before core.FactsTextsOnce: the
// facts and, when the event has any, its words, each from its own decode.
func twoDecodes(e *core.Event) core.EventFacts {
	f := core.FactsOf(e)
	if t, ok := search.DecodeTexts(e); ok {
		f = f.WithTexts(t)
	}
	return f
}

// checkFactsWithTexts holds FactsWithTexts (one decode when it can) to the
// two decodes apart: the same facts, the same words, the same Extract.
func checkFactsWithTexts(t *testing.T, e *core.Event) {
	t.Helper()
	got, want := search.FactsWithTexts(e), twoDecodes(e)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q:\none decode  %+v (texts %+v)\ntwo decodes %+v (texts %+v)", e.Type, e.Data, got, got.Texts(), want, want.Texts())
	}
	if a, b := search.ExtractFacts(e, &got), search.Extract(e); !reflect.DeepEqual(a, b) {
		t.Fatalf("%s %q: Extract from one decode %+v, from the data %+v", e.Type, e.Data, a, b)
	}
}

// TestFactsWithTextsEqualsTwoDecodes runs the text-heavy import
// benchmark's corpus and odd data through both ways; every corpus event of
// a type with words must take the one-decode way (else the import still
// decodes twice).
func TestFactsWithTextsEqualsTwoDecodes(t *testing.T) {
	log := storetest.NewCorpus(37).Log(2000, 1764500000000)
	once := 0
	for i := range log {
		e := &log[i]
		checkFactsWithTexts(t, e)
		if _, ok := core.FactsTextsOnce(e); ok {
			once++
		} else if _, words := search.DecodeTexts(e); words {
			t.Errorf("%s %q: decoded twice", e.Type, e.Data)
		}
	}
	if once == 0 {
		t.Fatal("no corpus event took the one-decode way")
	}
	for _, typ := range []string{core.EventUserMessage, core.EventAssistantMessage, core.EventToolCall, core.EventToolResult, core.EventSessionTitle, core.EventTurnEnd, core.EventApprovalAsked} {
		for _, data := range oddData {
			checkFactsWithTexts(t, &core.Event{Type: typ, Data: json.RawMessage(data)})
		}
	}
}

// oddData are data the strict one-decode way must refuse or decode as
// the two decodes do: names in another case, duplicates, invalid UTF-8,
// wrong types, members one decode reads and the other does not.
var oddData = []string{
	`{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"id":"m1","role":"user"}`,
	`{"Content":[{"TYPE":"text","Text":"upper"}],"SOURCE":{"Kind":"user"}}`,
	`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}`,
	`{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf8\"}]}",
	`{"content":[{"type":"text","text":"\ud800 lone surrogate"}]}`,
	`{"content":"not an array","source":{"kind":"user"}}`,
	`{"message":{"content":[{"type":"toolResult","isError":true,"content":[{"type":"text","text":"boom"}]}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"E","code":"TOOL_TIMEOUT"}}`,
	`{"message":{"content":[{"type":"text","text":"x"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":3,"outputTokens":4}}`,
	`{"message":{"source":{"model":7}}}`,
	`{"usage":{"inputTokens":1.5}}`,
	`{"usage":{"inputTokens":1e3}}`,
	`{"usage":null,"error":null,"reason":null}`,
	`{"turn":1,"step":2,"callId":"c1","name":"read","arguments":"{\"path\":\"/a\"}"}`,
	`{"turn":1.5,"callId":"c1","name":"read"}`,
	`{"turn":"1","callId":"c1"}`,
	`{"step":1,"callid":"c2","NAME":"grep"}`,
	`{"rootCallId":5,"callId":"c1"}`,
	`{"title":"a title","mode":"m"}`,
	`{"title":3}`,
	`{"turn":2,"reason":{"kind":"error","error":{"message":"m","code":"C","status":500}}}`,
	`{"reason":{"kind":"error","error":{"status":"500"}}}`,
	`{"reason":{"kind":"aborted","reason":{"kind":"user"}}}`,
	`{"reason":{"kind":"aborted","reason":"user"}}`,
	`{"error":{"code":5}}`,
	`{"message":{"content":[{"type":"text","text":"x","isError":"yes"}]}}`,
	`{"ſource":{"kind":"user"},"K":1}`,
	`[]`,
	`null`,
	`{}`,
	`{"content":[]} trailing`,
	`{"content":[{"type":"text","text":"cut`,
}

// FuzzFactsWithTexts holds the one-decode way to the two decodes on
// arbitrary data of each type with words.
func FuzzFactsWithTexts(f *testing.F) {
	types := []string{core.EventUserMessage, core.EventAssistantMessage, core.EventToolCall, core.EventToolResult, core.EventSessionTitle, core.EventTurnEnd}
	for i, d := range oddData {
		f.Add(uint8(i), []byte(d))
	}
	log := storetest.NewCorpus(7).Log(60, 1764500000000)
	for _, e := range log {
		for k, typ := range types {
			if typ == e.Type {
				f.Add(uint8(k), []byte(e.Data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		checkFactsWithTexts(t, &core.Event{Type: types[int(typ)%len(types)], Data: data})
	})
}
