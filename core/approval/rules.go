// Package approval makes tool calls wait for a person: the ask rules that
// turn a call's pre-execute decision into dsh's "ask" (Rules), and the
// Service, prism's approval channel, which logs approval/asked, waits for a
// decision from the browser or the API (or the turn's end, a timeout, the
// session's policy), logs approval/decided and answers the pipeline with
// one of dsh's four outcomes.
//
// The rule syntax (prism serve --ask, --ask-rule, PRISM_ASK_RULES):
//
//	TOOL                 every call of TOOL asks ("*": every call of every tool)
//	TOOL:FIELD~REGEXP    a call asks when argument FIELD matches REGEXP
//	TOOL:FIELD!~REGEXP   a call asks when argument FIELD does not match REGEXP
//
// FIELD is a top-level argument name, or a dotted path into nested objects
// (edits.path does not index arrays). A string argument is matched as it
// is; a number, boolean or null as its JSON text; an object or array as its
// compact JSON. An absent FIELD never matches, so "~" does not ask and
// "!~" does (write:path!~^src/ asks for a write without a path, too).
// REGEXP is Go's RE2 syntax, unanchored (write ^ and $ to anchor it), and
// is everything after the ~, trailing spaces included: "bash:command~^rm "
// (with its space) asks for "rm -rf build/" but not for "rmdir x".
package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"prism/core"
)

// Rule turns the calls it matches into an ask decision.
type Rule struct {
	// Tool is the tool name the rule applies to; "*" is every tool.
	Tool string
	// Field is the argument the rule tests ("" = every call of Tool).
	Field string
	// Negate asks when Field does not match (the "!~" form).
	Negate bool
	re     *regexp.Regexp
}

// ParseRule parses one rule (see the package doc); the error names what is
// wrong with it.
func ParseRule(s string) (Rule, error) {
	src := strings.TrimLeft(s, " \t")
	tool, test, hasTest := strings.Cut(src, ":")
	tool = strings.TrimSpace(tool)
	if tool == "" {
		return Rule{}, fmt.Errorf("ask rule %q: no tool name before the colon (want TOOL, TOOL:FIELD~REGEXP or TOOL:FIELD!~REGEXP)", s)
	}
	if strings.ContainsAny(tool, " \t~") {
		return Rule{}, fmt.Errorf("ask rule %q: %q is not a tool name", s, tool)
	}
	r := Rule{Tool: tool}
	if !hasTest {
		if strings.TrimSpace(src) != tool {
			return Rule{}, fmt.Errorf("ask rule %q: %q is not a tool name", s, strings.TrimSpace(src))
		}
		return r, nil
	}
	i := strings.IndexByte(test, '~')
	if i < 0 {
		return Rule{}, fmt.Errorf("ask rule %q: no ~ or !~ after the field (want TOOL:FIELD~REGEXP or TOOL:FIELD!~REGEXP)", s)
	}
	field, pattern := test[:i], test[i+1:]
	if strings.HasSuffix(field, "!") {
		field, r.Negate = field[:len(field)-1], true
	}
	r.Field = strings.TrimSpace(field)
	if r.Field == "" || strings.HasPrefix(r.Field, ".") || strings.HasSuffix(r.Field, ".") || strings.Contains(r.Field, "..") {
		return Rule{}, fmt.Errorf("ask rule %q: %q is not an argument name or dotted path", s, r.Field)
	}
	if pattern == "" {
		return Rule{}, fmt.Errorf("ask rule %q: the regular expression is empty", s)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return Rule{}, fmt.Errorf("ask rule %q: %w", s, err)
	}
	r.re = re
	return r, nil
}

// String returns the rule in its syntax.
func (r Rule) String() string {
	if r.Field == "" {
		return r.Tool
	}
	op := "~"
	if r.Negate {
		op = "!~"
	}
	return r.Tool + ":" + r.Field + op + r.re.String()
}

// Pattern returns the rule's regular expression ("" for a tool rule).
func (r Rule) Pattern() string {
	if r.re == nil {
		return ""
	}
	return r.re.String()
}

// match reports whether the rule asks for a call of tool with the parsed
// arguments args, and why.
func (r Rule) match(tool string, args any) (string, bool) {
	if r.Tool != "*" && r.Tool != tool {
		return "", false
	}
	if r.Field == "" {
		if r.Tool == "*" {
			return "every call needs approval", true
		}
		return tool + " calls need approval", true
	}
	v, ok := lookup(args, r.Field)
	switch {
	case !ok && r.Negate:
		return fmt.Sprintf("%s is absent, so it does not match \"%s\"", r.Field, r.re), true
	case !ok:
		return "", false
	}
	matched := r.re.MatchString(v)
	if matched == r.Negate {
		return "", false
	}
	if r.Negate {
		return fmt.Sprintf("%s does not match \"%s\"", r.Field, r.re), true
	}
	return fmt.Sprintf("%s matches \"%s\"", r.Field, r.re), true
}

// lookup returns the text of the argument at a dotted path.
func lookup(args any, path string) (string, bool) {
	v := args
	for rest, more := path, true; more; {
		var key string
		key, rest, more = strings.Cut(rest, ".")
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[key]; !ok {
			return "", false
		}
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Rules is an ordered set of ask rules.
type Rules []Rule

// ParseTools returns a tool rule for each name of a comma-separated list
// ("write,edit,bash"); blank entries are skipped.
func ParseTools(list string) (Rules, error) {
	var rs Rules
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if strings.ContainsAny(name, ":~") {
			return nil, fmt.Errorf("--ask %q: a tool name cannot hold : or ~ (argument patterns go in --ask-rule)", name)
		}
		r, err := ParseRule(name)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// ParseLines parses rules one per line (PRISM_ASK_RULES); blank lines and
// lines starting with # are skipped. An error names the line.
func ParseLines(text string) (Rules, error) {
	var rs Rules
	for i, line := range strings.Split(text, "\n") {
		// Only the line's start is trimmed: a pattern may end in spaces.
		line = strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := ParseRule(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Match reports whether any rule asks for a call of tool with the parsed
// arguments args; the reason joins what every matching rule says.
func (rs Rules) Match(tool string, args any) (reason string, ask bool) {
	var why []string
	for _, r := range rs {
		if w, ok := r.match(tool, args); ok {
			why = append(why, w)
		}
	}
	return strings.Join(why, "; "), len(why) > 0
}

// Hook returns the pre-execute middleware that applies the rules. It asks
// downstream first: a denial there stands (deny beats ask, as dsh's hook
// bridges fold decisions); otherwise a matching call asks, with the rules'
// reason joined to a downstream ask's.
func (rs Rules) Hook() core.PreExecuteHook {
	return func(_ context.Context, exec *core.Execution, next func() (core.PreDecision, error)) (core.PreDecision, error) {
		d, err := next()
		if err != nil || d.Kind == core.PreDeny {
			return d, err
		}
		reason, ask := rs.Match(exec.Name, exec.Arguments)
		if !ask {
			return d, nil
		}
		if d.Kind == core.PreAsk && d.Reason != "" {
			reason = d.Reason + "; " + reason
		}
		return core.Ask(reason), nil
	}
}
