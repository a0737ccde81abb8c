package agent_test

import (
	"testing"

	"prism/core"
	"prism/core/agent"
)

// TestFork_titleSaysItIsAFork: a fork's first own event titles it — its
// Title when given, else its Prompt's first line, else "fork of <the
// source's title> at turn N" (before its first turn for turn 0) — where
// the seed alone would keep the source's title verbatim.
func TestFork_titleSaysItIsAFork(t *testing.T) {
	g := newForkRig(t, namedModels{"same": countSteps([]string{"a"})})
	src, srcEvents := g.source("count the keys\nplease")
	if got := core.Summarize(srcEvents).Title; got != "count the keys" {
		t.Fatalf("source title = %q", got)
	}
	title := func(req agent.ForkRequest) string {
		t.Helper()
		req.Source = src
		id, err := g.r.Fork(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if req.Prompt != "" {
			g.l.waitTurns(t, id, 1)
		}
		return core.Summarize(g.store.log(id)).Title
	}
	for _, tc := range []struct {
		name string
		req  agent.ForkRequest
		want string
	}{
		{"at a turn", agent.ForkRequest{Boundary: at(1)}, "fork of count the keys at turn 1"},
		{"at the start", agent.ForkRequest{Boundary: at(0)}, "fork of count the keys before its first turn"},
		{"with a prompt", agent.ForkRequest{Boundary: at(1), Prompt: "\n  count again  \nslowly"}, "count again"},
		{"with a title", agent.ForkRequest{Boundary: at(1), Prompt: "count again", Title: " my branch "}, "my branch"},
	} {
		if got := title(tc.req); got != tc.want {
			t.Errorf("%s: the fork's title = %q, want %q", tc.name, got, tc.want)
		}
	}
}
