package search_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/search"
)

func terms(s string) []string {
	var out []string
	for _, t := range search.Tokens(s) {
		out = append(out, t.Term)
	}
	return out
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"greet_test.go", []string{"greet", "test", "go"}},
		{"fmt.Sprintf(\"%d\", n)", []string{"fmt", "sprintf", "d", "n"}},
		{"/home/u/config.yaml:12", []string{"home", "u", "config", "yaml", "12"}},
		{"TOOL_TIMEOUT", []string{"tool", "timeout"}},
		{"rm -rf /tmp/x", []string{"rm", "rf", "tmp", "x"}},
		{"Résumé naïve Ελληνικά Привет", []string{"resume", "naive", "ελληνικα", "привет"}},
		{"数据库连接失败", []string{"数", "据", "库", "连", "接", "失", "败"}},
		{"ファイルを読む", []string{"フ", "ァ", "イ", "ル", "を", "読", "む"}},
		{"が", []string{"が"}}, // kana keep their voicing marks
		{"한국어 텍스트", []string{"한국어", "텍스트"}},
		{"ＦＵＬＬ　ｗｉｄｔｈ ﬁle", []string{"full", "width", "file"}},
		{"x²", []string{"x2"}},
		{"\xff\xfeabc", []string{"abc"}},
		{"abc日本def", []string{"abc", "日", "本", "def"}},
		{"", nil},
		{"--- ... !!!", nil},
	} {
		if got := terms(tc.in); !cmp.Equal(got, tc.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTokenOffsets(t *testing.T) {
	in := "read Config.yaml — 数据 ok"
	for _, tok := range search.Tokens(in) {
		if got := search.Normalize(in[tok.Start:tok.End]); got != tok.Term {
			t.Errorf("token %+v: its text %q normalizes to %q", tok, in[tok.Start:tok.End], got)
		}
	}
	long := strings.Repeat("a", 300)
	toks := search.Tokens(long + " b")
	if len(toks) != 2 || len(toks[0].Term) != search.MaxTermBytes || toks[0].End != 300 {
		t.Errorf("a long word: %+v", toks)
	}
}

var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func TestParse(t *testing.T) {
	day := func(s string) int64 {
		tm, _ := time.Parse("2006-01-02", s)
		return tm.UnixMilli()
	}
	text := func(typed string, words ...string) search.Term {
		return search.Term{Field: search.FieldText, Words: words, Text: typed}
	}
	for _, tc := range []struct {
		in   string
		want []search.Clause
	}{
		{"grep", []search.Clause{{Terms: []search.Term{text("grep", "grep")}}}},
		{"config.yaml read", []search.Clause{{Terms: []search.Term{text("config.yaml", "config", "yaml")}}, {Terms: []search.Term{text("read", "read")}}}},
		{`"rm -rf"`, []search.Clause{{Terms: []search.Term{text(`"rm -rf"`, "rm", "rf")}}}},
		{"-word x", []search.Clause{{Not: true, Terms: []search.Term{text("word", "word")}}, {Terms: []search.Term{text("x", "x")}}}},
		{"conf*", []search.Clause{{Terms: []search.Term{{Words: []string{"conf"}, Prefix: true, Text: "conf*"}}}}},
		{"grep OR glob", []search.Clause{{Terms: []search.Term{text("grep", "grep"), text("glob", "glob")}}}},
		{"tool:grep", []search.Clause{{Terms: []search.Term{{Field: search.FieldTool, Value: "grep", Text: "tool:grep"}}}}},
		{"TOOL:mcp__gh__*", []search.Clause{{Terms: []search.Term{{Field: search.FieldTool, Value: "mcp__gh__", Prefix: true, Text: "TOOL:mcp__gh__*"}}}}},
		{"error:", []search.Clause{{Terms: []search.Term{{Field: search.FieldError, Text: "error:"}}}}},
		{"error:TOOL_TIMEOUT", []search.Clause{{Terms: []search.Term{{Field: search.FieldError, Value: "TOOL_TIMEOUT", Text: "error:TOOL_TIMEOUT"}}}}},
		{"status:Running", []search.Clause{{Terms: []search.Term{{Field: search.FieldStatus, Value: "running", Text: "status:Running"}}}}},
		{"session:0af3", []search.Clause{{Terms: []search.Term{{Field: search.FieldSession, Value: "0af3", Text: "session:0af3"}}}}},
		{"kind:call", []search.Clause{{Terms: []search.Term{{Field: search.FieldKind, Value: "call", Text: "kind:call"}}}}},
		{"after:2026-11-01", []search.Clause{{Terms: []search.Term{{Field: search.FieldAfter, Value: "2026-11-01", Time: day("2026-11-01"), Text: "after:2026-11-01"}}}}},
		{"before:7d", []search.Clause{{Terms: []search.Term{{Field: search.FieldBefore, Value: "7d", Time: now.Add(-7 * 24 * time.Hour).UnixMilli(), Text: "before:7d"}}}}},
		{"-tool:bash error:", []search.Clause{{Not: true, Terms: []search.Term{{Field: search.FieldTool, Value: "bash", Text: "tool:bash"}}}, {Terms: []search.Term{{Field: search.FieldError, Text: "error:"}}}}},
		{"http://x.io/a", []search.Clause{{Terms: []search.Term{text("http://x.io/a", "http", "x", "io", "a")}}}},
		{"NEAR(a, b)", []search.Clause{{Terms: []search.Term{text("NEAR(a,", "near", "a")}}, {Terms: []search.Term{text("b)", "b")}}}},
		{"x && y", []search.Clause{{Terms: []search.Term{text("x", "x")}}, {Terms: []search.Term{text("y", "y")}}}},
		{"--force", []search.Clause{{Terms: []search.Term{text("--force", "force")}}}},
		{`tool:"my tool"`, []search.Clause{{Terms: []search.Term{{Field: search.FieldTool, Value: "my tool", Text: `tool:"my tool"`}}}}},
		{"数据库", []search.Clause{{Terms: []search.Term{text("数据库", "数", "据", "库")}}}},
		{"日*", []search.Clause{{Terms: []search.Term{{Words: []string{"日"}, Prefix: true, Text: "日*"}}}}},
	} {
		q, err := search.Parse(tc.in, now)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, q.Clauses); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, diff)
		}
		again, err := search.Parse(q.String(), now)
		if err != nil || !cmp.Equal(again.Clauses, q.Clauses) {
			t.Errorf("Parse(%q).String() = %q does not parse back the same: %v", tc.in, q.String(), err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "the query is empty"},
		{"   ", "the query is empty"},
		{`"unbalanced`, "unclosed quote"},
		{`foo "bar`, "unclosed quote"},
		{`tool:"x`, "unclosed quote"},
		{"*", "* alone searches for nothing"},
		{"***", "* alone searches for nothing"},
		{"*foo", "a * goes at the end of a word"},
		{"a*", "a prefix needs at least 2 characters"},
		{"-foo", "only excludes"},
		{"-foo -tool:bash", "only excludes"},
		{"&& ||", "has no letters or digits"},
		{"tool:", "tool: needs a tool name"},
		{"tool:*", "put the start of a name"},
		{"status:done", "status:done is not a session status; use one of running, idle, ended, interrupted"},
		{"kind:file", "kind:file is not a kind of hit"},
		{"session:", "session: needs a session id"},
		{"after:yesterday", "want a day like 2026-11-01"},
		{"after:2026-13-01", "want a day like"},
		{"-after:2026-11-01 x", "cannot be excluded; use before:"},
		{"OR x", "OR needs a term on each side"},
		{"x OR", "OR needs a term on each side"},
		{"x OR OR y", "OR needs a term on each side"},
		{"-x OR y", "cannot be joined with OR"},
		{strings.Repeat("word ", 2048), "bytes long; at most 1024"},
		{strings.Repeat("w ", 40), "the query has 40 terms; at most 32"},
		{"\xff", "not valid UTF-8"},
	} {
		q, err := search.Parse(tc.in, now)
		var qe *search.QueryError
		if !errors.As(err, &qe) {
			t.Errorf("Parse(%.40q) = %v, %v; want a QueryError", tc.in, q, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%.40q): %q, want it to say %q", tc.in, err, tc.want)
		}
		if core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("Parse(%.40q): code %s", tc.in, core.ErrorCode(err))
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"grep", `"a b" -c tool:x error: status:idle`, "x OR y*", `tool:"q`, "NEAR(a b)", "*", "a-b-c", "kind:call after:7d before:2026-01-01T00:00:00Z", "日本語 -\"x y\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, err := search.Parse(in, now)
		if err != nil {
			var qe *search.QueryError
			if !errors.As(err, &qe) || qe.Msg == "" {
				t.Fatalf("Parse(%q): %v is not a QueryError with a message", in, err)
			}
			return
		}
		if len(q.Clauses) == 0 {
			t.Fatalf("Parse(%q): no clauses and no error", in)
		}
		for _, c := range q.Clauses {
			for _, tm := range c.Terms {
				for _, w := range tm.Words {
					if w == "" || len(w) > search.MaxTermBytes || !utf8.ValidString(w) || strings.ContainsAny(w, " \"*()-:ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
						t.Fatalf("Parse(%q): word %q cannot be an index term", in, w)
					}
				}
				if tm.Field == search.FieldText && len(tm.Words) == 0 {
					t.Fatalf("Parse(%q): a text term without words", in)
				}
			}
		}
		again, err := search.Parse(q.String(), now)
		if err != nil || !cmp.Equal(again.Clauses, q.Clauses) {
			t.Fatalf("Parse(%q).String() = %q parses to %v, %v", in, q.String(), again, err)
		}
	})
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"greet_test.go", "数据库 ok", "Résumé", "\xff\x00a", "ＦＵＬＬ", "x²½℅"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		last := 0
		for _, tok := range search.Tokens(in) {
			if tok.Start < last || tok.End <= tok.Start || tok.End > len(in) {
				t.Fatalf("Tokens(%q): bad offsets %+v", in, tok)
			}
			last = tok.End
			if tok.Term == "" || len(tok.Term) > search.MaxTermBytes || !utf8.ValidString(tok.Term) {
				t.Fatalf("Tokens(%q): bad term %q", in, tok.Term)
			}
			for i := 0; i < len(tok.Term); i++ {
				if c := tok.Term[i]; c < utf8.RuneSelf && !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
					t.Fatalf("Tokens(%q): term %q holds %q, which FTS's simple tokenizer would split on", in, tok.Term, c)
				}
			}
			if again := search.Normalize(in[tok.Start:tok.End]); again != tok.Term {
				t.Fatalf("Tokens(%q): %q normalizes to %q, not %q", in, in[tok.Start:tok.End], again, tok.Term)
			}
		}
	})
}
