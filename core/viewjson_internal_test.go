package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// trickyStrings are strings whose JSON encoding differs from their bytes in
// every way encoding/json knows: quotes and backslashes, every control byte
// (the named escapes and \u00XX), DEL, HTML characters (left unescaped in
// MarshalNoEscape's form), U+2028/U+2029, invalid and truncated UTF-8, and
// valid multi-byte text.
func trickyStrings() []string {
	var ctl strings.Builder
	for c := range 0x20 {
		ctl.WriteByte(byte(c))
	}
	return []string{
		"", "plain ascii", `"quoted" \back\slash\`, ctl.String(), "\x7f",
		"<script>alert('x') & </script>", "line\u2028sep\u2029para",
		"bad \xff\xfe utf8", "cut \xe2\x80", "cut at end \xe2", "\xed\xa0\x80 surrogate",
		"é 日本語 🎉 \U0010FFFF", "\tfmt.Println(\"line 1 <of> & output\")",
	}
}

// oldViewJSON is how views were encoded before they wrote their own JSON:
// marshalKeyed over encoding/json. It is the oracle the direct writers
// must match byte for byte.
func oldViewJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b []byte
	var err error
	switch x := v.(type) {
	case *ReadResultView:
		type plain ReadResultView
		p := *(*plain)(x)
		if p.Lines == nil {
			p.Lines = []ReadFileLine{}
		}
		b, err = marshalKeyed("card", CardRead, &p)
	case *TerminalResultView:
		type plain TerminalResultView
		b, err = marshalKeyed("card", CardTerminal, (*plain)(x))
	default:
		t.Fatalf("no oracle for %T", v)
	}
	if err != nil {
		t.Fatalf("oracle %T: %v", v, err)
	}
	return b
}

func checkViewJSON(t *testing.T, v json.Marshaler) {
	t.Helper()
	got, err := v.MarshalJSON()
	if err != nil {
		t.Fatalf("%T.MarshalJSON: %v", v, err)
	}
	if want := oldViewJSON(t, v); !bytes.Equal(got, want) {
		t.Fatalf("%T wrote\n%q\nencoding/json writes\n%q", v, got, want)
	}
	if !json.Valid(got) {
		t.Fatalf("%T wrote invalid JSON %q", v, got)
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range trickyStrings() {
		var buf bytes.Buffer
		if err := appendJSONString(&buf, s); err != nil {
			t.Fatal(err)
		}
		want, err := MarshalNoEscape(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("appendJSONString(%q) = %q, encoding/json writes %q", s, buf.Bytes(), want)
		}
	}
}

// TestDirectViewJSON: the read and terminal result views write exactly
// encoding/json's bytes, with every optional field absent and present and
// every string tricky.
func TestDirectViewJSON(t *testing.T) {
	exit, sig := 0, 137
	for _, s := range trickyStrings() {
		out := s
		checkViewJSON(t, &TerminalResultView{})
		checkViewJSON(t, &TerminalResultView{Output: &out})
		checkViewJSON(t, &TerminalResultView{Title: s, Output: &out, ExitCode: &exit, Signal: s})
		checkViewJSON(t, &TerminalResultView{ExitCode: &sig})
		checkViewJSON(t, &ReadResultView{})
		checkViewJSON(t, &ReadResultView{Path: s, Lines: []ReadFileLine{}})
		checkViewJSON(t, &ReadResultView{
			Title: s, Path: s, Offset: -3, TotalLines: 1 << 40, Lang: s,
			Lines:   []ReadFileLine{{Number: 1, Text: s}, {Number: -2, Text: ""}, {Number: 3, Text: s + s}},
			Content: Content{&TextBlock{Text: s}, &UnknownBlock{Type: "x", Raw: []byte(`{"type" : "x", "v":"<&>"}`)}},
		})
	}
}

// FuzzViewJSON holds the direct view writers to encoding/json for any
// strings.
func FuzzViewJSON(f *testing.F) {
	for _, s := range trickyStrings() {
		f.Add(s, s, 7)
	}
	f.Fuzz(func(t *testing.T, a, b string, n int) {
		var buf bytes.Buffer
		appendJSONString(&buf, a)
		if want, _ := MarshalNoEscape(a); !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("appendJSONString(%q) = %q, encoding/json writes %q", a, buf.Bytes(), want)
		}
		checkViewJSON(t, &TerminalResultView{Title: a, Output: &b, ExitCode: &n, Signal: b})
		checkViewJSON(t, &ReadResultView{Title: b, Path: a, Offset: n, TotalLines: n, Lang: b,
			Lines: []ReadFileLine{{Number: n, Text: a}, {Number: n + 1, Text: b}}, Content: Text(a + b)})
	})
}

// TestViewKindsTable: each row of viewKinds registers its own type, once;
// the zero view's JSON starts with the row's tags and names that row back.
func TestViewKindsTable(t *testing.T) {
	seen := map[string]bool{}
	for i, k := range viewKinds {
		if (k.call == nil) == (k.result == nil) {
			t.Fatalf("row %d: want exactly one of call and result", i)
		}
		var v json.Marshaler
		var card string
		if k.call != nil {
			cv := k.call()
			v, card = cv.(json.Marshaler), cv.Card()
		} else {
			rv := k.result()
			v, card = rv.(json.Marshaler), rv.Card()
		}
		if card != k.card {
			t.Errorf("row %d: %T.Card() = %q, the row says %q", i, v, card, k.card)
		}
		id := fmt.Sprintf("%v/%s/%s/%s", k.call != nil, k.card, k.key, k.tag)
		if seen[id] {
			t.Errorf("row %d: a second row for %s", i, id)
		}
		seen[id] = true
		data, err := v.MarshalJSON()
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		prefix := `{"card":"` + k.card + `"`
		if k.key != "" {
			prefix += `,"` + k.key + `":"` + k.tag + `"`
		}
		if !strings.HasPrefix(string(data), prefix) {
			t.Errorf("%T writes %s, want it to start with %s", v, data, prefix)
		}
		fields, card, err := viewHead(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := findViewKind(fields, card, k.call != nil); got != &viewKinds[i] {
			t.Errorf("%s names another row than %d", data, i)
		}
	}
	if len(viewKindOf) != len(viewKinds) {
		t.Errorf("%d view types for %d rows: a type is registered twice", len(viewKindOf), len(viewKinds))
	}
}
