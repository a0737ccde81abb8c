package views_test

import (
	"testing"

	"prism/core"
	"prism/core/price"
	"prism/views"
)

func TestCompactCount(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 999: "999", 1000: "1k", 1049: "1k", 1050: "1.1k", 12345: "12.3k", 99949: "99.9k", 99950: "100k",
		123456: "123k", 999499: "999k", 999500: "1M", 4_500_000: "4.5M", 2_000_000_000: "2G", 5_000_000_000_000: "5000G", -1500: "-1.5k",
	} {
		if got := views.CompactCount(n); got != want {
			t.Errorf("CompactCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSessionCost: the cost of a summary's usage by model, as the header
// and the list show it; models without usage do not make it unknown.
func TestSessionCost(t *testing.T) {
	tab := price.Table{"a": {Input: 1, Output: 2}}
	u := func(in, out int64) core.TokenUsage { return core.TokenUsage{InputTokens: in, OutputTokens: out} }
	for _, tc := range []struct {
		name       string
		models     []core.ModelUsage
		p          price.Table
		cost, note string
	}{
		{"no table", []core.ModelUsage{{Model: "a", TokenUsage: u(1e6, 0)}}, nil, "", ""},
		{"no usage", nil, tab, "", ""},
		{"priced", []core.ModelUsage{{Model: "a", TokenUsage: u(1e6, 1e6)}, {Model: "silent"}}, tab, "$3.00", ""},
		{"partly", []core.ModelUsage{{Model: "a", TokenUsage: u(1e6, 0)}, {Model: "b", TokenUsage: u(5, 5)}}, tab, "≥ $1.00", `no price for "b"`},
		{"unknown", []core.ModelUsage{{Model: "", TokenUsage: u(5, 5)}}, tab, "unknown", `no price for ""`},
	} {
		sum := core.Summary{Models: tc.models}
		if cost, note := views.SessionCost(&sum, tc.p); cost != tc.cost || note != tc.note {
			t.Errorf("%s: %q (%q), want %q (%q)", tc.name, cost, note, tc.cost, tc.note)
		}
	}
}
