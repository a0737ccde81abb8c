package views_test

import (
	"testing"

	"prism/core"
	"prism/core/price"
	"prism/views"
)

// TestNewBoardRow: a board row shows a session's title, status, link,
// tokens and cost as its list row does, priced or not.
func TestNewBoardRow(t *testing.T) {
	tab := price.Table{"a": {Input: 1, Output: 2}}
	usage := []core.ModelUsage{{Model: "a", TokenUsage: core.TokenUsage{InputTokens: 1_234_567, OutputTokens: 89_000}}}
	for _, tc := range []struct {
		name, id string
		sum      core.Summary
		p        price.Table
	}{
		{"titled, priced", "s1", core.Summary{Title: "fix <b>the</b> bug", Status: core.StatusRunning, InputTokens: 1_234_567, OutputTokens: 89_000, Models: usage}, tab},
		{"untitled, long id", "0123456789abcdef-long-session-id", core.Summary{Status: core.StatusRunning, InputTokens: 12}, nil},
		{"partly priced", "s2", core.Summary{Title: "t", Status: core.StatusRunning, Models: append(usage, core.ModelUsage{Model: "b", TokenUsage: core.TokenUsage{InputTokens: 5}})}, tab},
	} {
		list := views.NewSessionRow(tc.id, "", 1, 2, tc.sum, tc.p)
		got := views.NewBoardRow(tc.id, &tc.sum, tc.p)
		want := views.BoardRow{ID: tc.id, Title: list.Title, Status: list.Status, URL: list.URL, Tokens: list.Tokens, Cost: list.Cost}
		if got.ID != want.ID || got.Title != want.Title || got.Status != want.Status || got.URL != want.URL || got.Tokens != want.Tokens || got.Cost != want.Cost {
			t.Errorf("%s: board row %+v, want what the list row shows: %+v", tc.name, *got, want)
		}
		if tc.p != nil && got.Cost == "" {
			t.Errorf("%s: a priced session's board row has no cost", tc.name)
		}
	}
}
