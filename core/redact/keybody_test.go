package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKeyBody: lines shaped like a key's body, without either marker, are
// hidden — in one text with or without gutters, and kept a line per
// string — while lines of other shapes stay.
func TestKeyBody(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	b := testBody // three PEM lines of 64 characters, the last padded
	ssh := strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 1)
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "x\n" + b[0] + "\n" + b[1] + "\ny", "x\n[redacted:key-material]\ny"},
		{"gutters", "    12\t" + b[0] + "\n    13\t" + b[1] + "\n    14\t" + b[2] + "\n    15\tdone", "    12\t[redacted:key-material]\n    15\tdone"},
		{"grep", "k.pem\nLine 4: " + b[0] + "\nLine 9: " + b[1], "k.pem\nLine 4: [redacted:key-material]"},
		{"openssh width", ssh + "\r\n" + ssh[:60] + "AbC1xYz9A0" + "\r\n", "[redacted:key-material]\r\n"},
	} {
		if got, _ := r.String(tc.in); got != tc.want {
			t.Errorf("%s: String(%q)\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
	}
	for _, in := range []string{
		b[0],              // one line alone
		b[0] + " " + b[1], // not lines
		strings.Repeat("=", 64) + "\n" + strings.Repeat("=", 64), // separators
		strings.Repeat("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 1) + "\n" + "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae", // sha256 hex
		strings.Repeat("abcdefghijklmnop", 4) + "\n" + strings.Repeat("qrstuvwxyzabcdef", 4),                                                                              // one case, no digit
		"x" + b[0] + "\n" + b[1] + "x", // wider lines
	} {
		if got, hits := r.String(in); got != in || len(hits) != 0 {
			t.Errorf("String(%q) = %q; want it unchanged", in, got)
		}
	}
	// A line per string: found over the sibling strings.
	in, _ := json.Marshal(map[string]any{"lines": []any{
		map[string]any{"number": 20, "text": "}"}, map[string]any{"number": 21, "text": b[0]},
		map[string]any{"number": 22, "text": b[1]}, map[string]any{"number": 23, "text": "x"}}})
	out, kinds := r.JSON(in)
	want := `{"lines":[{"number":20,"text":"}"},{"number":21,"text":"[redacted:key-material]"},{"number":22,"text":""},{"number":23,"text":"x"}]}`
	if string(out) != want || strings.Join(kinds, ",") != KindKeyMaterial {
		t.Errorf("got %s %v\nwant %s", out, kinds, want)
	}
	// One line per string in an escaped text: the document is walked.
	doc, _ := json.Marshal(map[string]string{"content": "    1\t" + b[0] + "\n    2\t" + b[1] + "\n"})
	if !hasKeyLines(doc) {
		t.Errorf("hasKeyLines(%s) = false", doc)
	}
	if hasKeyLines([]byte(`{"a":"` + b[0] + `"}`)) {
		t.Error("hasKeyLines counts one line as two")
	}
}

// FuzzLongRun: longRun's skipping search finds the runs of 64 or more
// base64 bytes a byte-by-byte scan finds, in order.
func FuzzLongRun(f *testing.F) {
	f.Add(strings.Repeat("a", 63) + " " + strings.Repeat("b", 64) + "\"" + strings.Repeat("c", 70))
	f.Add(strings.Repeat("ab ", 50) + strings.Repeat("Z", 200))
	f.Fuzz(func(t *testing.T, s string) {
		var want [][2]int
		for i := 0; i < len(s); {
			if !isB64Byte(s[i]) {
				i++
				continue
			}
			j := i
			for j < len(s) && isB64Byte(s[j]) {
				j++
			}
			if j-i >= 64 {
				want = append(want, [2]int{i, j})
			}
			i = j
		}
		var got [][2]int
		for i := 0; ; {
			start, end, ok := longRun(s, i)
			if !ok {
				break
			}
			got = append(got, [2]int{start, end})
			i = end
		}
		if len(got) != len(want) {
			t.Fatalf("runs %v, want %v", got, want)
		}
		for n := range got {
			if got[n] != want[n] {
				t.Fatalf("runs %v, want %v", got, want)
			}
		}
	})
}
