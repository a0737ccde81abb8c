package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestExec_lossyArgumentsPrintTheResult: arguments that parse only lossily
// (1e400 overflows to +Inf) give the pipeline's failure, printed as JSON
// like any other failed call — the pending card shows the raw text.
func TestExec_lossyArgumentsPrintTheResult(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"exec", "--workspace", t.TempDir(), "note", `{"title":1e400}`}, &out, &errOut)
	if code != 1 || errOut.Len() != 0 {
		t.Fatalf("exit %d, stderr %q; want 1 and nothing on stderr", code, errOut.String())
	}
	var got struct {
		IsError bool `json:"isError"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
		CallView struct {
			Card     string `json:"card"`
			RawInput any    `json:"rawInput"`
		} `json:"callView"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%s", err, out.String())
	}
	if !got.IsError || got.Error.Message != "tool execution arguments must be losslessly JSON-serializable" {
		t.Errorf("result = %+v, want the lossless-arguments failure", got)
	}
	if got.CallView.Card != "generic" || got.CallView.RawInput != `{"title":1e400}` {
		t.Errorf("call view = %+v, want the generic card with the raw text", got.CallView)
	}
}
