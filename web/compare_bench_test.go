package web_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/compare"
	"prism/core/coretest"
	"prism/views"
)

// benchCalls builds a session of n tool calls, three per step: reads,
// greps and edits with results of a few lines. With variant set, every
// 100th call asks for another file (and gets another result): the
// differences are spread over the whole session, so the LCS cannot set
// aside equal heads and tails.
func benchCalls(n int, variant bool) []core.Event {
	b := coretest.NewBuilder(t0)
	b.TurnStart()
	for i := 0; i < n; {
		b.StepStart()
		if i == 0 {
			b.User("look at every file and fix the TODOs")
		}
		var calls [][3]string
		for k := 0; k < 3 && i < n; k, i = k+1, i+1 {
			file := fmt.Sprintf("pkg/f%04d.go", i)
			if variant && i%100 == 50 {
				file = fmt.Sprintf("pkg/g%04d.go", i)
			}
			tool, args := "read", `{"file_path":`+strconv.Quote(file)+`}`
			switch i % 3 {
			case 1:
				tool, args = "grep", `{"pattern":"TODO","path":`+strconv.Quote(file)+`}`
			case 2:
				tool, args = "edit", `{"file_path":`+strconv.Quote(file)+`,"old_string":"// TODO","new_string":"// done"}`
			}
			calls = append(calls, [3]string{"c" + strconv.Itoa(i), tool, args})
		}
		b.Assistant("working", calls...)
		for _, c := range calls {
			b.Call(c[0], c[1], c[2])
		}
		for _, c := range calls {
			b.Result(c[0], strings.Repeat("line of "+c[2]+"\n", 4), false, nil, nil)
		}
		b.StepEnd()
	}
	b.TurnEnd(core.TurnCompleted)
	return b.Events
}

// BenchmarkCompare: comparing two 3,000-call sessions (30 differing calls
// spread over them) against its floor, reading both sessions' events from
// SQLite (read) and decoding them (read+fold: the fold decodes every
// event, as the page does). compare is what the page and prism compare do
// before rendering: read both logs, fold each, list the calls and align
// them; align is the alignment alone; page is GET /compare/a/b over HTTP,
// rendering included.
func BenchmarkCompare(b *testing.B) {
	e := newEnv(b, nil)
	e.session(b, "a", benchCalls(3000, false))
	e.session(b, "b", benchCalls(3000, true))
	// A search files what the index lags first: the store's background
	// indexing of the new sessions is done before any timing.
	if res, body := e.get(b, "/api/search?q=TODO"); res.StatusCode != 200 {
		b.Fatalf("search: %d %s", res.StatusCode, body)
	}
	src := backend.Source{Store: e.store}
	reg := presenters(b)
	ctx := context.Background()
	load := func(b *testing.B, id string) (core.SessionHeader, []core.Event) {
		h, events, err := src.LoadSession(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		return h, events
	}
	side := func(b *testing.B, id string) compare.Side {
		h, events := load(b, id)
		return views.CompareSide(id, views.Fold(h, events, reg), nil)
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			load(b, "a")
			load(b, "b")
		}
	})
	b.Run("read+fold", func(b *testing.B) {
		for b.Loop() {
			for _, id := range []string{"a", "b"} {
				h, events := load(b, id)
				if t := views.Fold(h, events, reg); t.Summary().Calls != 3000 {
					b.Fatalf("%d calls", t.Summary().Calls)
				}
			}
		}
	})
	b.Run("compare", func(b *testing.B) {
		for b.Loop() {
			c := compare.Compare(side(b, "a"), side(b, "b"), compare.Options{})
			if c.Differences != 30 {
				b.Fatalf("%d differences, want 30", c.Differences)
			}
		}
	})
	sa, sb := side(b, "a"), side(b, "b")
	b.Run("align", func(b *testing.B) {
		for b.Loop() {
			if r := compare.Align(sa.Calls, sb.Calls, compare.Options{}); r.Differences != 30 {
				b.Fatalf("%d differences, want 30", r.Differences)
			}
		}
	})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			if res, body := e.get(b, views.CompareURL("a", "b")); res.StatusCode != 200 || !strings.Contains(body, `data-differences="30"`) {
				b.Fatalf("GET compare: %d", res.StatusCode)
			}
		}
	})
}
