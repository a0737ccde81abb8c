package store

import (
	"encoding/json"
	"strings"
	"testing"

	"prism/core"
)

// TestPrepareEventsRefusesUnsafeTimes: an event whose time is beyond
// JavaScript's safe integers is refused with an error naming it (a log's
// JSON cannot hold it, and a search cursor's float64 would round it,
// losing or repeating hits on the next page); the largest safe time is
// kept.
func TestPrepareEventsRefusesUnsafeTimes(t *testing.T) {
	ev := func(tm int64) []core.Event {
		return []core.Event{{Type: core.EventTurnStart, Seq: 0, Time: tm, Data: json.RawMessage(`{"turn":1}`)}}
	}
	for _, tm := range []int64{1<<53 - 1, -(1<<53 - 1), 0, 1764500000000} {
		if _, err := PrepareEvents("s", 0, ev(tm), false); err != nil {
			t.Errorf("time %d: %v", tm, err)
		}
	}
	for _, tm := range []int64{1 << 53, 1<<53 + 1, -(1 << 53), 1764500000000000000} {
		_, err := PrepareEvents("s", 0, ev(tm), false)
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "is not a safe integer") {
			t.Errorf("time %d: %v, want an invalid-input error naming the time", tm, err)
		}
	}
}
