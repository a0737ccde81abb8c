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

func TestCheck_forkData(t *testing.T) {
	for _, tc := range []struct {
		data, err string
	}{
		{data: `{"session":"f1","seedLength":12}`},
		{data: `{"session":"f1","seedLength":0}`},
		{data: `"f1"`, err: "data must be a JSON object {session, seedLength}"},
		{data: `{"seedLength":3}`, err: "session must name the fork"},
		{data: `{"session":"f1","seedLength":-1}`, err: "seedLength must be the non-negative number"},
		{data: `{"session":"f\u0000","seedLength":1}`, err: "is not a session id"},
		{data: `{"session":"f1","seedLength":1,"x":1}`, err: `unknown field "x"`},
	} {
		_, _, err := notes.Check(notes.Input{Session: "s", Kind: notes.KindFork, Data: []byte(tc.data)})
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.data, err)
			}
			continue
		}
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want %q", tc.data, err, tc.err)
		}
	}
}
