package mcp

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wordCases are splitWords' cases; err is a substring of the error, "" when
// the input splits; lines marks an input with a newline outside quotes, which
// sh reads as two commands (so it is not compared with sh).
var wordCases = []struct {
	in    string
	want  []string
	err   string
	lines bool
}{
	{``, nil, "", false},
	{" \t\r\n ", nil, "", true},
	{`a b  c`, []string{"a", "b", "c"}, "", false},
	{"a\tb\nc\r\nd", []string{"a", "b", "c", "d"}, "", true},
	// single quotes: everything literal, backslashes and double quotes too
	{`'a b' 'c\d' '"e"'`, []string{"a b", `c\d`, `"e"`}, "", false},
	{`'$HOME' '*'`, []string{"$HOME", "*"}, "", false},
	// double quotes: a backslash escapes only $ ` " \ and newline
	{`"a b" "c\"d" "e\\f" "g\h" "\$x"`, []string{"a b", `c"d`, `e\f`, `g\h`, "$x"}, "", false},
	{"\"a\\\nb\"", []string{"ab"}, "", false},
	{"\"a\nb\"", []string{"a\nb"}, "", false},
	// outside quotes: a backslash keeps the next character
	{`a\ b c\\d \'e\" \x`, []string{"a b", `c\d`, `'e"`, "x"}, "", false},
	{"a\\\nb", []string{"ab"}, "", false},
	// parts of one word join
	{`a'b c'"d e"f`, []string{"ab cd ef"}, "", false},
	// empty words
	{`"" ''`, []string{"", ""}, "", false},
	{`a "" b`, []string{"a", "", "b"}, "", false},
	// comments begin a word only
	{"a #b c\nd", []string{"a", "d"}, "", true},
	{`a#b "#c" \#d`, []string{"a#b", "#c", "#d"}, "", false},
	{`""#x`, []string{"#x"}, "", false},
	// no expansion and no operators: shell syntax is plain text
	{`echo "$HOME" ; rm -rf / && x | y > z $(id) ~ *`, []string{"echo", "$HOME", ";", "rm", "-rf", "/", "&&", "x", "|", "y", ">", "z", "$(id)", "~", "*"}, "", false},
	// unbalanced quotes and a dangling backslash
	{`a "b`, nil, `no closing quote for the " at byte 2`, false},
	{`a 'b`, nil, `no closing quote for the ' at byte 2`, false},
	{`"a\"`, nil, `no closing quote for the " at byte 0`, false},
	{`'it''s`, nil, `no closing quote for the ' at byte 4`, false},
	{`a\`, nil, "a backslash at the end escapes nothing", false},
}

func TestSplitWords(t *testing.T) {
	for _, tt := range wordCases {
		got, err := splitWords(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("splitWords(%q) = %q, %v; want the error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("splitWords(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("splitWords(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestSplitWordsAgreesWithSh holds splitWords to a real POSIX shell: each
// case without shell syntax that sh would expand or act on gives sh's
// words, and each unbalanced quote is a syntax error to sh too.
func TestSplitWordsAgreesWithSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	compared := 0
	for _, tt := range wordCases {
		if tt.lines || strings.ContainsAny(tt.in, "$`;&|<>(){}*?[]~") || strings.HasSuffix(tt.in, `\`) {
			continue // expansion, operators, and a dangling backslash (which sh keeps) differ by design
		}
		// set -f: no globbing; printf prints each word NUL-terminated.
		compared++
		cmd := exec.Command(sh, "-c", "set -f; printf '%s\\0' "+tt.in)
		out, err := cmd.Output()
		if tt.err != "" {
			if err == nil {
				t.Errorf("sh accepts %q (printing %q), splitWords refuses it", tt.in, out)
			}
			continue
		}
		if err != nil {
			t.Errorf("sh -c on %q: %v", tt.in, err)
			continue
		}
		var shWords []string
		if len(tt.want) > 0 {
			shWords = strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00")
		}
		if !slices.Equal(shWords, tt.want) {
			t.Errorf("%q: sh splits into %q, the case wants %q", tt.in, shWords, tt.want)
		}
	}
	if compared < len(wordCases)/2 {
		t.Errorf("only %d of %d cases compared with sh", compared, len(wordCases))
	}
}

// FuzzSplitWords: any input splits or errors without panicking, and words
// quoted back (each in single quotes) split into the same words.
func FuzzSplitWords(f *testing.F) {
	for _, tt := range wordCases {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitWords(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := splitWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("splitWords(%q) = %q; quoted back it splits into %q, %v", s, words, again, err)
		}
	})
}
