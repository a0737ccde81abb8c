package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAliasText_onlyStringValues: a child's id is replaced where a string
// value names it — after a JSON escape too — and never in a key, a number
// or a literal; the result stays JSON; an id that is a plain word is
// replaced only as the value of a field that names a child.
func TestAliasText_onlyStringValues(t *testing.T) {
	const id = "0194f3a2-aaaa-bbbb-cccc-0123456789ab"
	a := map[string]string{id: "child-1"}
	for _, text := range []string{"spawned:\n" + id, "x\t" + id, "<" + id + ">", "a\u2028" + id, "id=" + id + "\n", id} {
		b, err := json.Marshal(map[string]string{"output": text})
		if err != nil {
			t.Fatal(err)
		}
		out, changed := aliasText(b, a)
		if !changed || strings.Contains(string(out), id) || !json.Valid(out) {
			t.Errorf("%q: changed=%v, got %s; want the id replaced, valid JSON", text, changed, out)
			continue
		}
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(text, id, "child-1"); got["output"] != want {
			t.Errorf("%q: output %q, want %q", text, got["output"], want)
		}
	}
	// Not a whole id: inside a longer run of id characters.
	for _, text := range []string{"x" + id, id + "9", "_" + id} {
		b, _ := json.Marshal(map[string]string{"output": text})
		if out, changed := aliasText(b, a); changed {
			t.Errorf("%q is not the id, but became %s", text, out)
		}
	}

	// Ids a hand-made log may use: keys, numbers and literals stay.
	for _, c := range []struct{ id, doc string }{
		{"text", `{"type":"text","text":"hi"}`},
		{"1733500000", `{"time":1733500000,"n":[1733500000]}`},
		{"true", `{"isError":true}`},
		{"summary", `{"content":"a summary of the summary"}`},
	} {
		out, changed := aliasText([]byte(c.doc), map[string]string{c.id: "child-1"})
		if changed || string(out) != c.doc {
			t.Errorf("id %q: %s became %s (changed=%v); want it untouched", c.id, c.doc, out, changed)
		}
	}
	// …but the field that names a child is replaced whatever the id.
	out, changed := aliasText([]byte(`{"meta":{"child": "text"},"type":"text"}`), map[string]string{"text": "child-1"})
	if want := `{"meta":{"child": "child-1"},"type":"text"}`; !changed || string(out) != want {
		t.Errorf("child field: got %s, want %s", out, want)
	}
	// A note's data: a value that is exactly an id, whatever it looks like.
	out, changed = aliasNoteData([]byte(`{"child":"kid","background":false}`), map[string]string{"kid": "child-2"})
	if want := `{"child":"child-2","background":false}`; !changed || string(out) != want {
		t.Errorf("note: got %s, want %s", out, want)
	}
}

// FuzzAliasText: whatever the document, the result is JSON when the input
// is, and no distinctive id survives in any string value.
func FuzzAliasText(f *testing.F) {
	const id = "kid-12345678"
	f.Add([]byte(`{"a":"kid-12345678","kid-12345678":1}`))
	f.Add([]byte(`["x\nkid-12345678\u003c", 5, true, null]`))
	f.Add([]byte(`"kid-12345678"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _ := aliasText(b, map[string]string{id: "child-1"})
		if !json.Valid(b) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s became %s: not JSON", b, out)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if i := strings.Index(x, id); i >= 0 {
					before, after := byte(' '), byte(' ')
					if i > 0 {
						before = x[i-1]
					}
					if j := i + len(id); j < len(x) {
						after = x[j]
					}
					if !idChar(before) && !idChar(after) {
						t.Fatalf("%s: the id survives in value %q", b, x)
					}
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
	})
}
