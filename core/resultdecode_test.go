package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// resultSeeds are tool/result data in core's own shape (what the fast path
// must take) and near misses (what it must leave to encoding/json).
func resultSeeds(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	add := func(d ToolResultData) {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	add(ToolResultData{Turn: 1, Step: 2, Message: NewToolResultMessage("m1", "c1", Text("hello <b>\n\u2028 \"q\""), false)})
	add(ToolResultData{Turn: 3, Step: 1, Message: NewToolResultMessage("m2", "c2", Text(strings.Repeat("line\n", 50)), true),
		Error: &ErrorInfo{Name: "ToolError", Code: "BOOM"}, Meta: json.RawMessage(`{"path":"/w/a.go","lines":[{"number":1,"text":"x"}],"n":1e400}`)})
	add(ToolResultData{Message: NewToolResultMessage("m3", "c3", Content{}, false), Meta: json.RawMessage(`[1, 2 ,{"a" : null}]`)})
	for _, s := range []string{
		`{"turn":1,"step":1,"message":{"id":"m","role":"tool","content":[{"type":"toolResult","toolCallId":"c","content":[{"type":"text","text":"a"}],"isError":false}],"source":{"kind":"tool","callId":"c"}},"meta":null}`,
		`{"turn":1,"step":1,"message":{"id":"m","role":"tool","content":[{"type":"toolResult","toolCallId":"c","content":null}],"source":{"kind":"tool","callId":"c"}}}`,
		`{"turn":1,"Step":1,"message":{"id":"m","role":"tool","content":[],"source":{"kind":"tool"}}}`,
		`{"turn":1,"turn":2,"message":{"id":"m","role":"tool","content":[],"source":{"kind":"tool"}}}`,
		`{"turn":1.5,"message":{"id":"m","role":"tool","content":[]}}`,
		`{"turn":1e2,"message":{"id":"m","role":"tool","content":[]}}`,
		`{"turn":-0,"message":{"id":"m","role":"tool","content":[{"type":"text","text":"\ud800 \u00e9 \/"}]}}`,
		"{\"message\":{\"id\":\"m\",\"role\":\"tool\",\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}",
		`{"message":{"id":"m","content":[{"type":"image","attachment":{"id":"a"}}]}}`,
		`{"message":{"id":"m","content":[{"type":"text","text":"a","toolCallId":"x"}]}}`,
		`{"message":{"id":"m","content":[{"type":"mystery","x":1}]}}`,
		`{"message":{"id":"m","content":[{"text":"no type"}]}}`,
		`{"message":null}`, `{"message":{"content":null}}`, `{}`, `[]`, `null`, `{"turn":"1"}`, `{"error":{"name":"a","code":"b","extra":1}}`,
		`{"message":{"id":"m","content":[]},"error":null,"meta":"text"}`, `{"message":{"id":"m","content":[]},"meta":{"a":1}} `,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// decodeSlow is what DecodeToolResultData must equal: encoding/json.
func decodeSlow(data []byte) (ToolResultData, error) {
	var d ToolResultData
	err := json.Unmarshal(data, &d)
	return d, err
}

func checkSameDecode(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := decodeSlow(data)
	var got ToolResultData
	gotErr := DecodeToolResultData(data, &got)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("DecodeToolResultData(%q) error = %v, encoding/json says %v", data, gotErr, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("DecodeToolResultData(%q) differs from encoding/json (-want +got):\n%s", data, diff)
	}
}

func TestDecodeToolResultDataMatchesEncodingJSON(t *testing.T) {
	for _, s := range resultSeeds(t) {
		checkSameDecode(t, s)
	}
}

// TestDecodeToolResultDataFastPath proves the fast path is taken for the
// data core writes (else the speed-up would silently be lost) and left for
// the near misses encoding/json decodes differently.
func TestDecodeToolResultDataFastPath(t *testing.T) {
	seeds := resultSeeds(t)
	for i, s := range seeds[:3] {
		var d ToolResultData
		if !decodeToolResultFast(s, &d) {
			t.Errorf("seed %d (%s): core's own shape was not decoded by the fast path", i, s)
		}
	}
	for _, s := range []string{
		`{"turn":1,"Step":1,"message":{"id":"m","role":"tool","content":[]}}`,
		`{"turn":1,"turn":2,"message":{"id":"m","content":[]}}`,
		`{"message":{"id":"m","content":[{"type":"toolResult","toolCallId":"c","content":null}]}}`,
		"{\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}",
		`{"message":{"id":"m","content":[]},"meta":null}`,
	} {
		var d ToolResultData
		if decodeToolResultFast([]byte(s), &d) {
			t.Errorf("%s: the fast path took data encoding/json decodes its own way", s)
		}
	}
}

func FuzzDecodeToolResultData(f *testing.F) {
	for _, s := range resultSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSameDecode(t, data) })
}

// BenchmarkDecodeToolResult20k decodes the tool/result of a 20,000-line
// read (1 MB of text, 1.2 MB of meta): the one-pass decoder and
// encoding/json.
func BenchmarkDecodeToolResult20k(b *testing.B) {
	var text, meta strings.Builder
	meta.WriteString(`{"path":"/work/big.go","offset":1,"totalLines":20000,"lang":"go","lines":[`)
	for i := range 20000 {
		line := "\tfmt.Println(\"line <of> & output\")"
		text.WriteString(strings.Repeat("x", i%7) + ": " + line + "\n")
		if i > 0 {
			meta.WriteByte(',')
		}
		m, _ := json.Marshal(map[string]any{"number": i + 1, "text": line})
		meta.Write(m)
	}
	meta.WriteString("]}")
	data, err := json.Marshal(ToolResultData{Turn: 1, Step: 1, Message: NewToolResultMessage("r", "c", Text(text.String()), false), Meta: json.RawMessage(meta.String())})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    func([]byte, *ToolResultData) error
	}{{"one-pass", DecodeToolResultData}, {"encoding-json", func(d []byte, v *ToolResultData) error { return json.Unmarshal(d, v) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var d ToolResultData
				if err := c.f(data, &d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
