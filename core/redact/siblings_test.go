package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOnlyMultiLineRulesSpanStrings: the analysis of the rules' syntax
// finds the built-in rules that can match a newline — the private key's
// two — and a user rule that can; no other built-in.
func TestOnlyMultiLineRulesSpanStrings(t *testing.T) {
	var multi []string
	for _, ru := range builtinRules() {
		if canMatchNewline(ru) {
			multi = append(multi, ru.kind)
		}
	}
	if strings.Join(multi, ",") != KindPrivateKey+","+KindPrivateKey {
		t.Errorf("rules that can match a newline: %v; want the two private key rules", multi)
	}
	if canMatchNewline(envFileRule()) {
		t.Error("the .env-file rule can match a newline")
	}
	for src, want := range map[string]bool{`BEGIN[\s\S]*END`: true, `(?s)a.b`: true, `a.b`: false, "x\ny": true, `[^\n]+`: false, `(?m)^k=\w+$`: false, `key=(?P<secret>\w+)\s`: false} {
		r, err := New(src)
		if err != nil {
			t.Fatal(err)
		}
		if r.multiAlways != want {
			t.Errorf("user rule %q: spans strings %v, want %v", src, r.multiAlways, want)
		}
	}
}

const (
	testBegin = "-----BEGIN RSA " + "PRIVATE KEY-----"
	testEnd   = "-----END RSA " + "PRIVATE KEY-----"
)

var testBody = []string{
	"MIIEowIBAAKCAQEA7bq8m9YrQ0JmZ3xYf8uQ2wLkP3sT9vN1cR6hD4jF0aZ5eXbM",
	"q0JmZ3xYf8uQ2wLkP3sT9vN1cR6hD4jF0aZ5eXbMMIIEowIBAAKCAQEA7bq8m9Yr",
	"Zz9Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3Ab4Cd5==",
}

// TestSiblingStrings: a key kept one line per string, in every shape the
// tools use, is redacted in each string it touches — the marker in the
// first, the others emptied — while the lines around it stay, and the
// hit is counted once.
func TestSiblingStrings(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	lines := append(append([]string{"before", testBegin}, testBody...), testEnd, "after")
	read := []map[string]any{}
	grep := []map[string]any{}
	blocks := []map[string]any{}
	for i, l := range lines {
		read = append(read, map[string]any{"number": i + 1, "text": l})
		grep = append(grep, map[string]any{"lineNumber": i + 1, "line": l})
		blocks = append(blocks, map[string]any{"type": "text", "text": l})
	}
	args, _ := json.Marshal(map[string]any{"lines": lines})
	for name, doc := range map[string]any{
		"read meta":      map[string]any{"meta": map[string]any{"path": "k.pem", "lines": read}},
		"grep meta":      map[string]any{"meta": map[string]any{"shape": "matches", "files": []any{map[string]any{"path": "k.pem", "matches": grep}}}},
		"content blocks": map[string]any{"message": map[string]any{"content": []any{map[string]any{"type": "tool-result", "content": blocks}}}},
		"string array":   map[string]any{"lines": lines},
		"arguments":      map[string]any{"callId": "c1", "arguments": string(args)},
		"top level":      lines,
	} {
		t.Run(name, func(t *testing.T) {
			in, _ := json.Marshal(doc)
			out, kinds := r.JSON(in)
			if !json.Valid(out) {
				t.Fatalf("invalid JSON: %s", out)
			}
			s := string(out)
			if name == "arguments" {
				var a struct{ Arguments string }
				if err := json.Unmarshal(out, &a); err != nil {
					t.Fatal(err)
				}
				s = a.Arguments
			}
			for _, l := range testBody {
				if strings.Contains(s, l[:16]) || strings.Contains(s, l[len(l)-16:]) {
					t.Errorf("a body line survives: %s", s)
				}
			}
			for _, keep := range []string{`"before"`, `"after"`} {
				if !strings.Contains(s, keep) {
					t.Errorf("the line %s around the key is gone: %s", keep, s)
				}
			}
			if strings.Count(s, `"[redacted:private-key]"`) != 1 || strings.Count(s, `""`) != len(testBody)+1 {
				t.Errorf("want the marker once and the key's other lines empty: %s", s)
			}
			if strings.Join(kinds, ",") != KindPrivateKey {
				t.Errorf("kinds %v, want one private-key", kinds)
			}
			if again, more := r.JSON(out); len(more) != 0 || string(again) != string(out) {
				t.Errorf("redacting the output again finds %v", more)
			}
		})
	}
}

// TestSiblingStringsUserRule: a user rule whose match spans lines spans
// strings too; sibling strings that no spanning hit touches are redacted
// one by one as before.
func TestSiblingStringsUserRule(t *testing.T) {
	r, err := New(`BEGIN VAULT[\s\S]*?END VAULT`)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal([]string{"x", "BEGIN VAULT", "s3cr3tVaultBody", "END VAULT", "password=hunter2"})
	out, kinds := r.JSON(in)
	if want := `["x","[redacted:custom]","","","password=[redacted:password]"]`; string(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
	if strings.Join(kinds, ",") != "custom,password" {
		t.Errorf("kinds %v", kinds)
	}
}

// TestPrivateKeyTail: the end of a key without its BEGIN line — a diff
// hunk or a numbered read that starts inside it — is found, gutters and
// escaped newlines included; the text before it stays.
func TestPrivateKeyTail(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"ctx\n" + strings.Join(testBody, "\n") + "\n" + testEnd + "\nafter", "ctx\n[redacted:private-key]\nafter"},
		{"    11\tctx\n    12\t" + testBody[1] + "\n    13\t" + testBody[2] + "\n    14\t" + testEnd, "    11\tctx\n    12\t[redacted:private-key]"},
		{`{"k":"` + testBody[2] + `\n` + testEnd + `\n"}`, `{"k":"[redacted:private-key]\n"}`},
	} {
		if got, _ := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestEnvFileGrepGutter: grep's "Line N: " gutter before a line of a .env
// file does not hide its value.
func TestEnvFileGrepGutter(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	in := "Found 1 match\n\n.env\nLine 1: PLAIN_NAME=value1234"
	if got := apply(in, r.find(in, true)); got != "Found 1 match\n\n.env\nLine 1: PLAIN_NAME=[redacted:env]" {
		t.Errorf("got %q", got)
	}
}

// FuzzSiblingLines: a private key among any other lines, kept one line per
// string as read's meta keeps them, never leaves a body line, and the
// document stays valid JSON.
func FuzzSiblingLines(f *testing.F) {
	f.Add("before\n", "\nafter", false)
	f.Add("", "", true)
	f.Add("x: ", " -----END", true)
	r, err := New()
	if err != nil {
		f.Fatal(err)
	}
	key := testBegin + "\n" + strings.Join(testBody, "\n") + "\n" + testEnd
	f.Fuzz(func(t *testing.T, prefix, suffix string, objects bool) {
		if strings.Contains(prefix+suffix, testBody[0][:16]) {
			return
		}
		lines := strings.Split(prefix+key+suffix, "\n")
		var doc any = lines
		if objects {
			var ls []map[string]any
			for i, l := range lines {
				ls = append(ls, map[string]any{"number": i + 1, "text": l})
			}
			doc = map[string]any{"lines": ls}
		}
		in, err := json.Marshal(doc)
		if err != nil {
			return
		}
		out, _ := r.JSON(in)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		for _, l := range testBody {
			for i := 0; i+16 <= len(l); i += 16 {
				if strings.Contains(string(out), l[i:i+16]) {
					t.Fatalf("%q survives in %s", l[i:i+16], out)
				}
			}
		}
	})
}

// TestPrivateKeyBlocksBackToBack: the block rule alone finds each of two
// keys a few lines apart (the first block's window does not swallow the
// second's BEGIN keyword); the tail rule alone finds each of two tails and
// leaves whole blocks to the block rule.
func TestPrivateKeyBlocksBackToBack(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	block := func(kind string, begin bool) string {
		b := strings.Join(testBody, "\n") + "\n-----END " + kind + " PRIVATE KEY-----"
		if begin {
			b = "-----BEGIN " + kind + " PRIVATE KEY-----\n" + b
		}
		return b
	}
	for i, name := range []string{"block", "tail"} {
		s := "a\n" + block("RSA", i == 0) + "\nafter 0\nbefore 1\n" + block("OPENSSH", i == 0) + "\nz"
		f := finder{s: s, occ: find(&r.kw, s, nil, false)}
		f.windows(&r.rules[i], i, r.ruleKW[i], r.kw.list)
		hits := merge(f.hits)
		if len(hits) != 2 {
			t.Fatalf("%s rule: %d hits, want 2: %+v", name, len(hits), hits)
		}
		if got := apply(s, hits); strings.Contains(got, testBody[1][:16]) || !strings.Contains(got, "after 0\nbefore 1") {
			t.Errorf("%s rule: %q", name, got)
		}
	}
	full := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(testBody, "\n") + "\n-----END RSA PRIVATE KEY-----"
	f := finder{s: full, occ: find(&r.kw, full, nil, false)}
	if f.windows(&r.rules[1], 1, r.ruleKW[1], r.kw.list); len(f.hits) != 0 {
		t.Errorf("the tail rule searched a whole block: %+v", f.hits)
	}
}
