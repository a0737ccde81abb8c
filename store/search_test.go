package store

import (
	"encoding/base64"
	"math"
	"strings"
	"testing"

	"prism/core"
)

// TestSearchCursorRoundTrip: a cursor decodes to what was encoded, for
// its own order only; anything else is core.CodeInvalid, naming the
// cursor.
func TestSearchCursorRoundTrip(t *testing.T) {
	for _, c := range []SearchCursor{
		{Order: OrderTime, Key: 1764500000000, Doc: 42},
		{Order: OrderRank, Key: 3.25, Doc: 1},
		{Order: OrderRank, Key: math.Inf(-1), Doc: -7},
	} {
		got, err := DecodeSearchCursor(c.Encode(), c.Order)
		if err != nil || got != c {
			t.Errorf("DecodeSearchCursor(Encode(%+v)) = %+v, %v", c, got, err)
		}
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{
		SearchCursor{Order: OrderRank, Key: 1, Doc: 2}.Encode(), // another order
		"!!",
		enc("time:1"),
		enc("time:1:2:3"),
		enc("time:xyz:2"),
		enc("time:1:2x"),
		enc(""),
	} {
		_, err := DecodeSearchCursor(bad, OrderTime)
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "malformed cursor") || !strings.Contains(err.Error(), bad) {
			t.Errorf("DecodeSearchCursor(%q) = %v, want %s naming it", bad, err, core.CodeInvalid)
		}
	}
}
