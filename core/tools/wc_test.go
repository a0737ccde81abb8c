package tools_test

import (
	"strings"
	"testing"

	"prism/core"
	"prism/core/tools"
	"prism/prismtest"
)

// TestWcCard: wc's completed call gets the count card with its counts.
func TestWcCard(t *testing.T) {
	list, err := tools.Builtins(tools.Options{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	for _, tl := range list {
		reg.MustRegister(tl)
	}
	c := prismtest.Card(t, reg, "wc", `{"text":"one two\nthree"}`)
	if c.Pending.Kind() != core.CardGeneric || c.Completed.Kind() != core.CardCount {
		t.Fatalf("cards %q → %q, want generic → count", c.Pending.Kind(), c.Completed.Kind())
	}
	if got := strings.Join(strings.Fields(c.Completed.Find(`[data-testid="count"]`).Text()), " "); got != "2 lines 3 words 13 characters" {
		t.Errorf("count card says %q", got)
	}
}
