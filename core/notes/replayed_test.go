package notes_test

import (
	"strings"
	"testing"

	"prism/core"
	"prism/core/notes"
)

func TestCheck_replayedData(t *testing.T) {
	for _, tc := range []struct {
		data, err string
	}{
		{data: `{"sourceSession":"s1","sourceSeq":12}`},
		{data: `{"sourceSession": "s1", "sourceSeq": 0}`},
		{data: `[]`, err: "data must be a JSON object {sourceSession, sourceSeq}"},
		{data: `{"sourceSeq":3}`, err: "sourceSession must name the source session"},
		{data: `{"sourceSession":" ","sourceSeq":3}`, err: "sourceSession must name the source session"},
		{data: `{"sourceSession":"s1"}`, err: "sourceSeq must be the non-negative seq"},
		{data: `{"sourceSession":"s1","sourceSeq":-1}`, err: "sourceSeq must be the non-negative seq"},
		{data: `{"sourceSession":"s1","sourceSeq":1.5}`, err: "data must be {sourceSession, sourceSeq}"},
		{data: `{"sourceSession":"s1","sourceSeq":1,"extra":true}`, err: `unknown field "extra"`},
	} {
		got, _, err := notes.Check(notes.Input{Session: "f", Kind: notes.KindReplayed, CallID: "c1", Data: []byte(tc.data)})
		if tc.err == "" {
			if err != nil || !strings.HasPrefix(string(got), `{"sourceSession":"s1"`) {
				t.Errorf("%s: %s, %v", tc.data, got, err)
			}
			continue
		}
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "replayed note: ") {
			t.Errorf("%s: err %v, want %q", tc.data, err, tc.err)
		}
	}
}
