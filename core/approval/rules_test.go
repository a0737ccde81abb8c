package approval_test

import (
	"context"
	"strings"
	"testing"

	"prism/core"
	"prism/core/approval"
)

func TestParseRuleRefusesBadRules(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"", "no tool name"},
		{":command~rm", "no tool name"},
		{"bash:command", "no ~ or !~"},
		{"bash:~rm", `"" is not an argument name`},
		{"bash:!~rm", `"" is not an argument name`},
		{"bash:a..b~x", `"a..b" is not an argument name`},
		{"bash:.a~x", `".a" is not an argument name`},
		{"bash:command~", "the regular expression is empty"},
		{"bash:command~(", "missing closing )"},
		{"ba sh", `"ba sh" is not a tool name`},
	} {
		_, err := approval.ParseRule(tc.rule)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ask rule") {
			t.Errorf("ParseRule(%q) = %v, want an error naming the rule and %q", tc.rule, err, tc.want)
		}
	}
}

func TestParseToolsAndLines(t *testing.T) {
	rs, err := approval.ParseTools(" write, edit ,,bash")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	if strings.Join(got, " ") != "write edit bash" {
		t.Errorf("ParseTools = %v", got)
	}
	if _, err := approval.ParseTools("bash:command~rm"); err == nil || !strings.Contains(err.Error(), "--ask-rule") {
		t.Errorf("ParseTools with a pattern = %v, want a pointer to --ask-rule", err)
	}

	// A line's start is trimmed, its end is not: "^rm " ends in a space.
	rs, err = approval.ParseLines("# reviewed commands\r\nbash:command~^rm \r\n\n  write:file_path!~^src/\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].String() != "bash:command~^rm " || rs[0].Pattern() != "^rm " ||
		rs[1].String() != "write:file_path!~^src/" || !rs[1].Negate || rs[1].Pattern() != "^src/" {
		t.Errorf("ParseLines = %q", rs)
	}
	if _, err := approval.ParseLines("bash\nwrite:path~(\n"); err == nil || !strings.HasPrefix(err.Error(), "line 2: ") {
		t.Errorf("ParseLines with a bad second line = %v, want it named", err)
	}
}

// TestRulesMatch is the policy table: which calls ask, and the reason the
// card shows.
func TestRulesMatch(t *testing.T) {
	rules := func(lines string) approval.Rules {
		rs, err := approval.ParseLines(lines)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	for _, tc := range []struct {
		name   string
		rules  string
		tool   string
		args   string // raw arguments, parsed as the loop does
		ask    bool
		reason string
	}{
		{"tool rule", "bash", "bash", `{"command":"ls"}`, true, "bash calls need approval"},
		{"tool rule, other tool", "bash", "read", `{"file_path":"a"}`, false, ""},
		{"every tool", "*", "read", `{}`, true, "every call needs approval"},
		{"match", "bash:command~^rm ", "bash", `{"command":"rm -rf build/"}`, true, `command matches "^rm "`},
		{"no match", "bash:command~^rm ", "bash", `{"command":"ls -l"}`, false, ""},
		{"unanchored", "bash:command~rm -rf", "bash", `{"command":"cd x && rm -rf y"}`, true, `command matches "rm -rf"`},
		{"negated, inside", "write:path!~^src/", "write", `{"path":"src/main.go"}`, false, ""},
		{"negated, outside", "write:path!~^src/", "write", `{"path":"/etc/passwd"}`, true, `path does not match "^src/"`},
		{"negated, absent field", "write:path!~^src/", "write", `{"content":"x"}`, true, `path is absent, so it does not match "^src/"`},
		{"absent field does not match", "bash:command~rm", "bash", `{}`, false, ""},
		{"unparsable arguments have no fields", "bash:command~rm", "bash", `{"command":"rm`, false, ""},
		{"number as JSON text", "read:limit~^[0-9]{4,}$", "read", `{"limit":10000}`, true, `limit matches "^[0-9]{4,}$"`},
		{"boolean as JSON text", "grep:multiline~true", "grep", `{"multiline":true}`, true, `multiline matches "true"`},
		{"object as compact JSON", `edit:opts~"force":true`, "edit", `{"opts":{"force":true}}`, true, `opts matches ""force":true"`},
		{"dotted path", "edit:opts.path~^/", "edit", `{"opts":{"path":"/etc/x"}}`, true, `opts.path matches "^/"`},
		{"dotted path through a non-object", "edit:opts.path~^/", "edit", `{"opts":["/etc/x"]}`, false, ""},
		{"field names are case-sensitive", "bash:command~rm", "bash", `{"Command":"rm x"}`, false, ""},
		{"any tool by field", "*:file_path~\\.env$", "read", `{"file_path":"app/.env"}`, true, `file_path matches "\.env$"`},
		{"every matching rule is a reason", "bash\nbash:command~^rm ", "bash", `{"command":"rm x"}`, true, `bash calls need approval; command matches "^rm "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, ask := rules(tc.rules).Match(tc.tool, core.ParseArguments(tc.args))
			if ask != tc.ask || reason != tc.reason {
				t.Errorf("Match = %v %q, want %v %q", ask, reason, tc.ask, tc.reason)
			}
		})
	}
}

// TestRulesHook: the rules ask through the pipeline; a downstream denial
// stands, a downstream ask keeps its reason.
func TestRulesHook(t *testing.T) {
	rs, err := approval.ParseLines("note:title~^secret")
	if err != nil {
		t.Fatal(err)
	}
	exec := &core.Execution{Name: "note", Arguments: map[string]any{"title": "secret plans"}}
	for _, tc := range []struct {
		name       string
		downstream core.PreDecision
		exec       *core.Execution
		want       core.PreDecision
	}{
		{"match asks", core.Allow(), exec, core.Ask(`title matches "^secret"`)},
		{"no match keeps downstream", core.Allow(), &core.Execution{Name: "note", Arguments: map[string]any{"title": "plans"}}, core.Allow()},
		{"deny beats ask", core.Deny("notes are off"), exec, core.Deny("notes are off")},
		{"a downstream ask keeps its reason", core.Ask("reviewed by policy"), exec, core.Ask(`reviewed by policy; title matches "^secret"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rs.Hook()(context.Background(), tc.exec, func() (core.PreDecision, error) { return tc.downstream, nil })
			if err != nil || got != tc.want {
				t.Errorf("hook = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// FuzzParseRule: any text either parses into a rule that writes itself
// back (String) to the same rule, or is refused with the rule named; a
// parsed rule matches any arguments without panicking.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"bash", "*", "bash:command~^rm ", "write:file_path!~^src/", "edit:opts.path~^/", "a:b!~", ":x~y", "bash:~", "x:y~(", "t:f~a~b", "t:f!!~x", " \tbash:c~x "} {
		f.Add(s, `{"command":"rm -rf /","opts":{"path":"/etc"}}`)
	}
	f.Fuzz(func(t *testing.T, text, args string) {
		r, err := approval.ParseRule(text)
		if err != nil {
			if !strings.Contains(err.Error(), "ask rule") {
				t.Fatalf("error %q does not name the rule", err)
			}
			return
		}
		again, err := approval.ParseRule(r.String())
		if err != nil {
			t.Fatalf("%q parsed as %q, which does not parse: %v", text, r.String(), err)
		}
		if again.String() != r.String() || again.Tool != r.Tool || again.Field != r.Field || again.Negate != r.Negate || again.Pattern() != r.Pattern() {
			t.Fatalf("%q → %q → %q", text, r.String(), again.String())
		}
		approval.Rules{r}.Match(r.Tool, core.ParseArguments(args))
	})
}

// BenchmarkRulesMatch is the cost the ask rules add to every call: three
// tool rules and three argument patterns against a bash call that matches
// none.
func BenchmarkRulesMatch(b *testing.B) {
	rs, err := approval.ParseLines("write\nedit\nweb_fetch\nbash:command~^rm \nbash:command~(^|[;&|] *)sudo \nwrite:file_path!~^src/")
	if err != nil {
		b.Fatal(err)
	}
	args := core.ParseArguments(`{"command":"go test ./... && git status --short","description":"Run the tests"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ask := rs.Match("bash", args); ask {
			b.Fatal("asked")
		}
	}
}
