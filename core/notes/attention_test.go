package notes_test

import (
	"encoding/json"
	"strings"
	"testing"

	"prism/core/notes"
)

func TestAttentionDataIsChecked(t *testing.T) {
	in := func(data string) notes.Input {
		return notes.Input{Session: "s", Kind: notes.KindAttention, Data: json.RawMessage(data)}
	}
	if _, _, err := notes.Check(in(`{"rule":"stuck","reason":"bash pending for 2m0s","key":"stuck|call:c1","clearedAt":1700000000000,"clearedBy":"owner"}`)); err != nil {
		t.Fatalf("a valid attention note: %v", err)
	}
	for data, want := range map[string]string{
		`{"reason":"x"}`:                       "must name its rule",
		`{"rule":"a","reason":"x","extra":1}`:  "unknown field",
		`{"rule":"a","clearedAt":-5}`:          "clearedAt must be epoch milliseconds",
		`{"rule":"a","clearedAt":"yesterday"}`: "data must be {rule, reason",
		`["rule"]`:                             "data must be {rule, reason",
	} {
		_, _, err := notes.Check(in(data))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s) = %v, want an error containing %q", data, err, want)
		}
	}
}
