package compare_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"prism/core/compare"
)

// call builds a completed call of tool in step 1 of turn 1.
func call(tool, args, result string) compare.Call {
	return compare.Call{Tool: tool, Args: args, Result: result, HasResult: true, Turn: 1, Step: 1}
}

func marks(r compare.Result) []string {
	var out []string
	for _, p := range r.Pairs {
		s := string(p.Mark) + " " + p.Tool()
		if p.Positional {
			s += " (by place)"
		}
		out = append(out, s)
	}
	return out
}

func session() []compare.Call {
	return []compare.Call{
		call("read", `{"file_path":"a.go"}`, "package a"),
		call("grep", `{"pattern":"TODO"}`, "a.go:3"),
		call("write", `{"file_path":"b.go","content":"x"}`, "wrote b.go"),
		call("bash", `{"command":"go test"}`, "ok"),
	}
}

func TestAlign(t *testing.T) {
	errCall := func(c compare.Call, code string) compare.Call {
		c.IsError, c.ErrorCode = true, code
		return c
	}
	tests := []struct {
		name  string
		a, b  func() []compare.Call
		want  []string
		diffs int
	}{
		{"identical sessions: every pair same", session, session,
			[]string{"same read", "same grep", "same write", "same bash"}, 0},
		{"arguments in another key order and spacing are the same call", session, func() []compare.Call {
			s := session()
			s[2].Args = `{ "content": "x",  "file_path": "b.go" }`
			return s
		}, []string{"same read", "same grep", "same write", "same bash"}, 0},
		{"one changed argument: exactly one pair whose arguments differ", session, func() []compare.Call {
			s := session()
			s[1].Args = `{"pattern":"FIXME"}`
			return s
		}, []string{"same read", "arguments differ grep (by place)", "same write", "same bash"}, 1},
		{"an inserted call", session, func() []compare.Call {
			s := session()
			return slices.Insert(s, 2, call("glob", `{"pattern":"*.go"}`, "a.go"))
		}, []string{"same read", "same grep", "inserted glob", "same write", "same bash"}, 1},
		{"a deleted call", session, func() []compare.Call {
			return slices.Delete(session(), 0, 1)
		}, []string{"deleted read", "same grep", "same write", "same bash"}, 1},
		{"a result difference", session, func() []compare.Call {
			s := session()
			s[3].Result = "FAIL"
			return s
		}, []string{"same read", "same grep", "same write", "result differs bash"}, 1},
		{"an error difference", session, func() []compare.Call {
			s := session()
			s[0] = errCall(s[0], "FILE_NOT_FOUND")
			return s
		}, []string{"error differs read", "same grep", "same write", "same bash"}, 1},
		{"another error code", func() []compare.Call {
			s := session()
			s[0] = errCall(s[0], "FILE_NOT_FOUND")
			return s
		}, func() []compare.Call {
			s := session()
			s[0] = errCall(s[0], "TOOL_TIMEOUT")
			return s
		}, []string{"error differs read", "same grep", "same write", "same bash"}, 1},
		{"a call still waiting is pending, not a difference", session, func() []compare.Call {
			s := session()
			s[3].HasResult, s[3].Result = false, ""
			return s
		}, []string{"same read", "same grep", "same write", "pending bash"}, 0},
		{"a call interrupted on one side, answered on the other: an error difference", session, func() []compare.Call {
			s := session()
			s[3].HasResult, s[3].Result, s[3].Stopped = false, "", true
			return s
		}, []string{"same read", "same grep", "same write", "error differs bash"}, 1},
		{"a call interrupted on both sides is the same", func() []compare.Call {
			s := session()
			s[3].HasResult, s[3].Result, s[3].Stopped = false, "", true
			return s
		}, func() []compare.Call {
			s := session()
			s[3].HasResult, s[3].Result, s[3].Stopped = false, "", true
			return s
		}, []string{"same read", "same grep", "same write", "same bash"}, 0},
		{"calls of another step are not paired by place", session, func() []compare.Call {
			s := session()
			s[1].Args, s[1].Step = `{"pattern":"FIXME"}`, 2
			return s
		}, []string{"same read", "deleted grep", "inserted grep", "same write", "same bash"}, 2},
		{"another tool at the same place is not paired", session, func() []compare.Call {
			s := session()
			s[1] = call("glob", `{"pattern":"*"}`, "")
			return s
		}, []string{"same read", "deleted grep", "inserted glob", "same write", "same bash"}, 2},
		{"unpaired calls of two steps interleave by step", func() []compare.Call {
			s := session()
			s[0].Args, s[0].Step = `{"file_path":"x.go"}`, 1
			s[1].Args, s[1].Step = `{"pattern":"X"}`, 2
			return s[:2]
		}, func() []compare.Call {
			s := session()
			s[0].Tool, s[0].Step = "glob", 1
			s[1].Tool, s[1].Step = "glob", 2
			return s[:2]
		}, []string{"deleted read", "inserted glob", "deleted grep", "inserted glob"}, 4},
		{"empty against a session: all inserted", func() []compare.Call { return nil }, session,
			[]string{"inserted read", "inserted grep", "inserted write", "inserted bash"}, 4},
		{"both empty", func() []compare.Call { return nil }, func() []compare.Call { return nil }, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compare.Align(tt.a(), tt.b(), compare.Options{})
			if got := marks(r); !slices.Equal(got, tt.want) {
				t.Errorf("marks\n got %q\nwant %q", got, tt.want)
			}
			if r.Differences != tt.diffs {
				t.Errorf("Differences = %d, want %d", r.Differences, tt.diffs)
			}
			if len(r.Notes) != 0 {
				t.Errorf("notes %q, want none", r.Notes)
			}
		})
	}
}

// TestAlign_LCS: the alignment keeps the longest run of common calls, not
// the first match it sees.
func TestAlign_LCS(t *testing.T) {
	k := func(names ...string) []compare.Call {
		var cs []compare.Call
		for i, n := range names {
			c := call("t", `{"k":"`+n+`"}`, "")
			c.Step = i // no positional pairing: every call its own step
			cs = append(cs, c)
		}
		return cs
	}
	a := k("x", "a", "b", "c", "d")
	b := k("a", "b", "c", "x", "d")
	r := compare.Align(a, b, compare.Options{})
	var got []string
	for _, p := range r.Pairs {
		got = append(got, string(p.Mark))
	}
	want := []string{"deleted", "same", "same", "same", "inserted", "same"}
	if !slices.Equal(got, want) {
		t.Fatalf("marks %q, want %q", got, want)
	}
}

// TestAlign_cap: past the cell bound the middle is paired by place, and a
// note says so; equal heads and tails still align.
func TestAlign_cap(t *testing.T) {
	mk := func(prefix string, n int) []compare.Call {
		var cs []compare.Call
		cs = append(cs, call("read", `{"file_path":"head"}`, ""))
		for i := range n {
			c := call("read", fmt.Sprintf(`{"file_path":"%s%d"}`, prefix, i), "")
			c.Step = 2
			cs = append(cs, c)
		}
		return append(cs, call("read", `{"file_path":"tail"}`, ""))
	}
	a, b := mk("a", 10), mk("b", 10)
	r := compare.Align(a, b, compare.Options{MaxCells: 99})
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "10 × 10 calls differ, past the alignment's bound of 99 cells") {
		t.Fatalf("notes %q, want the bound's note", r.Notes)
	}
	if len(r.Pairs) != 12 || r.Pairs[0].Mark != compare.Same || r.Pairs[11].Mark != compare.Same {
		t.Fatalf("pairs %q: want the head and tail same", marks(r))
	}
	for _, p := range r.Pairs[1:11] {
		if p.Mark != compare.ArgsDiffer || !p.Positional {
			t.Fatalf("pairs %q: want the middle paired by place", marks(r))
		}
	}
	if r := compare.Align(a, b, compare.Options{MaxCells: 100}); len(r.Notes) != 0 {
		t.Fatalf("at the bound: notes %q, want none", r.Notes)
	}
}

func TestShortArgs(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"{\"b\": 1,\n \"a\": \"x\"}", `{"a":"x","b":1}`},
		{`{"path":"a-very-long-name"}`, `{"path":"a-ver…`},
		{"not json \x1b[31m", "not json �[31m"},
	} {
		c := compare.Call{Args: tt.args}
		if got := compare.ShortArgs(&c, 15); got != tt.want {
			t.Errorf("ShortArgs(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
