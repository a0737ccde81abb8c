package agent_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"prism/core"
	"prism/core/agent"
)

// TestFork_titleSaysItIsAFork: a fork's first own event titles it — its
// Title when given, else its Prompt's first line, else `fork of “<the
// source's title>” at turn N` (before its first turn for turn 0) — where
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
		{"at a turn", agent.ForkRequest{Boundary: at(1)}, "fork of “count the keys” at turn 1"},
		{"at the start", agent.ForkRequest{Boundary: at(0)}, "fork of “count the keys” before its first turn"},
		{"with a prompt", agent.ForkRequest{Boundary: at(1), Prompt: "\n  count again  \nslowly"}, "count again"},
		{"with a title", agent.ForkRequest{Boundary: at(1), Prompt: "count again", Title: " my branch "}, "my branch"},
	} {
		if got := title(tc.req); got != tc.want {
			t.Errorf("%s: the fork's title = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFork_longSourceTitleKeepsTheTurn: a source named at length (a
// session/title of 200 characters) is cut in its fork's title, so the
// title still ends with the turn.
func TestFork_longSourceTitleKeepsTheTurn(t *testing.T) {
	g := newForkRig(t, namedModels{"same": countSteps([]string{"a"})})
	src, _ := g.source("count")
	name := strings.Repeat("n", 200)
	ev := core.Event{Type: core.EventSessionTitle, Seq: int64(len(g.store.log(src))), Time: 1, Data: []byte(`{"title":"` + name + `"}`)}
	if err := g.store.AppendEvents(t.Context(), src, []core.Event{ev}); err != nil {
		t.Fatal(err)
	}
	id, err := g.r.Fork(t.Context(), agent.ForkRequest{Source: src, Boundary: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	got := core.Summarize(g.store.log(id)).Title
	if n := utf8.RuneCountInString(got); n != 200 || !strings.HasPrefix(got, "fork of “nnn") || !strings.HasSuffix(got, "n…” at turn 1") {
		t.Errorf("the fork's title = %q (%d characters); want the source's name cut to fit 200 with \"… at turn 1\" kept", got, n)
	}
}
