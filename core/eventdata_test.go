package core_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

// TestStreamChunkFinishReason checks that finish chunks use dsh's
// {"kind": …} reason object and that older bare strings still decode.
func TestStreamChunkFinishReason(t *testing.T) {
	stop := core.StreamChunk{Type: core.ChunkFinish, Reason: "stop"}
	data, err := json.Marshal(stop)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `{"type":"finish","reason":{"kind":"stop"}}`; got != want {
		t.Errorf("Marshal(finish stop) = %s, want %s", got, want)
	}
	for _, tt := range []struct {
		in   string
		want core.StreamChunk
	}{
		{`{"type":"finish","reason":{"kind":"tool-calls"}}`, core.StreamChunk{Type: "finish", Reason: "tool-calls"}},
		{`{"type":"finish","reason":"max-tokens"}`, core.StreamChunk{Type: "finish", Reason: "max-tokens"}},
		{`{"type":"finish","reason":{"kind":"error","failure":{"message":"boom","code":"SERVER","status":500}}}`,
			core.StreamChunk{Type: "finish", Reason: "error", Failure: &core.LLMFailure{Message: "boom", Code: "SERVER", Status: 500}}},
	} {
		var got core.StreamChunk
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
}
