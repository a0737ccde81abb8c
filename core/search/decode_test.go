package search

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestUnmarshalV1MatchesEncodingJSON holds unmarshalV1 (the JSON v2
// engine under v1 semantics) to encoding/json's value and verdict on the
// shapes decodeTexts reads, odd inputs included: names in another case,
// duplicate names, invalid UTF-8, wrong types, malformed text.
func TestUnmarshalV1MatchesEncodingJSON(t *testing.T) {
	type result struct {
		Message messageJSON `json:"message"`
		Error   *struct {
			Name string `json:"name"`
			Code string `json:"code"`
		} `json:"error"`
	}
	inputs := []string{
		`{"message":{"content":[{"type":"toolResult","isError":true,"content":[{"type":"text","text":"boom"}]}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"E","code":"TOOL_TIMEOUT"},"meta":{"x":[1,2,{"y":null}]}}`,
		`{"MESSAGE":{"Content":[{"TYPE":"text","Text":"upper"}]}}`,
		`{"message":{"content":[{"type":"text","text":"a"}]},"message":{"content":[{"type":"text","text":"b"}]}}`,
		"{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf8\"}]}}",
		`{"message":{"content":[{"type":"text","text":"\ud800 lone surrogate"}]}}`,
		`{"message":{"content":"not an array"}}`,
		`{"message":{"content":[{"type":"text","text":"cut`,
		`[]`,
		`null`,
		`{"message":{"content":[{"type":"text","text":"x","isError":"yes"}]}}`,
		`{"message":{"content":[]}} trailing`,
	}
	for _, in := range inputs {
		var a, b result
		errA := json.Unmarshal([]byte(in), &a)
		errB := unmarshalV1([]byte(in), &b)
		if (errA == nil) != (errB == nil) {
			t.Errorf("%q: encoding/json err %v, v2 engine err %v", in, errA, errB)
			continue
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Errorf("%q: encoding/json %+v, v2 engine %+v", in, a, b)
		}
	}
}
