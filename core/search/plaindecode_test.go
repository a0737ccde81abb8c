package search

import (
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// plainJSON are stored snippets as Encode writes them and as jsonb prints
// them, with escapes, and JSON the fast path leaves to the JSON package.
var plainJSON = []string{
	Plain{}.Encode(),
	Plain{Failed: true, More: &PlainPart{Label: "result", Text: "exit 1"}}.Encode(),
	Plain{Name: &PlainPart{Label: "tool", Text: "grep"}, Body: &PlainPart{Label: "arguments", Text: `{"pattern": "a\\b <c> & é…"}`}}.Encode(),
	`{"b": {"l": "text", "t": "héllo \"q\" \u00e9 \ud83d\ude00"}, "f": true, "m": {"l": "result", "t": ""}}`,
	` { "e" : { "t" : "x" , "l" : "error" } } `,
	`{"n": {}}`,
	`{"n": null}`,
	`{"x": 1}`,
	`{"f": true, "f": false}`,
	`{"n": {"l": "a", "l": "b"}}`,
	`{"b": {"l": "a", "t": 1}}`,
	"{\"b\": {\"l\": \"a\", \"t\": \"\xff\"}}",
	"{\"b\": {\"l\": \"a\", \"t\": \"tab\tin\"}}",
	`{"b": {"l": "a", "t": "x"}`,
	`{"b": {"l": "a", "t": "x"}} trailing`,
	`{"b": {"l": "a", "t": "bad \q escape"}}`,
	`{"F": true}`,
	`[]`,
	``,
}

// checkPlainFast holds decodePlainFast to jsonv2.Unmarshal: what it
// accepts, the JSON package reads to the same Plain.
func checkPlainFast(t *testing.T, s string) {
	t.Helper()
	got, ok := decodePlainFast(s)
	if !ok {
		return
	}
	var want Plain
	if err := jsonv2.Unmarshal([]byte(s), &want); err != nil {
		t.Fatalf("decodePlainFast(%q) = %+v, but the JSON package rejects it: %v", s, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodePlainFast(%q) = %+v, the JSON package reads %+v", s, got, want)
	}
}

// TestDecodePlainFast: the fast path reads what Encode writes and what
// jsonb prints (no fallback), as the JSON package reads it, and leaves
// anything else to the JSON package.
func TestDecodePlainFast(t *testing.T) {
	for i, s := range plainJSON {
		checkPlainFast(t, s)
		if _, ok := decodePlainFast(s); ok != (i <= 5) {
			t.Errorf("decodePlainFast(%q): ok %v, want %v", s, ok, i <= 5)
		}
		got, err := DecodePlain(s)
		var want Plain
		werr := jsonv2.Unmarshal([]byte(s), &want)
		if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("DecodePlain(%q) = %+v, %v; the JSON package: %+v, %v", s, got, err, want, werr)
		}
	}
	long := Plain{More: &PlainPart{Label: "result", Text: strings.Repeat(`a "quoted" line\ `, 40)}}.Encode()
	if p, ok := decodePlainFast(long); !ok || p.More == nil || !strings.HasPrefix(p.More.Text, `a "quoted" line\ a`) {
		t.Errorf("decodePlainFast(%.60q…) = %+v, %v", long, p, ok)
	}
}

func FuzzDecodePlainFast(f *testing.F) {
	for _, s := range plainJSON {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkPlainFast(t, s)
		checkPlainSnippet(t, s)
	})
}

// checkPlainSnippet holds PlainSnippet to DecodePlain(s).Snippet().
func checkPlainSnippet(t *testing.T, s string) {
	t.Helper()
	got, err := PlainSnippet(s)
	p, werr := DecodePlain(s)
	if (err != nil) != (werr != nil) {
		t.Fatalf("PlainSnippet(%q): error %v, DecodePlain's %v", s, err, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, p.Snippet()) {
		t.Fatalf("PlainSnippet(%q) = %+v, DecodePlain(…).Snippet() = %+v", s, got, p.Snippet())
	}
}

// TestPlainSnippet: PlainSnippet is DecodePlain's Snippet, its error
// included, for every column chosen (failed or not), and allocates
// nothing for what Encode writes.
func TestPlainSnippet(t *testing.T) {
	all := []string{
		Plain{Name: &PlainPart{"tool", "grep"}}.Encode(),
		Plain{Name: &PlainPart{"tool", "grep"}, Body: &PlainPart{"arguments", "a"}, More: &PlainPart{"result", "b"}, Err: &PlainPart{"error", "E"}}.Encode(),
		Plain{Failed: true, Name: &PlainPart{"tool", "grep"}, Body: &PlainPart{"arguments", "a"}, More: &PlainPart{"result", "b"}, Err: &PlainPart{"error", "E"}}.Encode(),
		Plain{Failed: true, Name: &PlainPart{"tool", "grep"}, Err: &PlainPart{"error", "E"}}.Encode(),
		Plain{Err: &PlainPart{"error", "E"}}.Encode(),
	}
	for _, s := range append(all, plainJSON...) {
		checkPlainSnippet(t, s)
	}
	want := []string{"grep", "a", "b", "E", "E"}
	for i, s := range all {
		if got, _ := PlainSnippet(s); got.Text != want[i] || got.Highlights == nil {
			t.Errorf("PlainSnippet(%s) = %+v, want the text %q and empty (not nil) highlights", s, got, want[i])
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = PlainSnippet(all[2]) }); n != 0 {
		t.Errorf("PlainSnippet of a stored snippet allocates %v times, want 0", n)
	}
}

// BenchmarkDecodePlain decodes a card's stored snippet by DecodePlain and,
// as the baseline, by the JSON package alone.
func BenchmarkDecodePlain(b *testing.B) {
	s := Plain{Name: &PlainPart{Label: "tool", Text: "grep"}, Body: &PlainPart{Label: "arguments", Text: `{"pattern":"func (st \u003e *Store) Search","path":"db/"}`},
		More: &PlainPart{Label: "result", Text: strings.Repeat("db/searchquery.go:235: func (st *Store) Search(ctx context.Context) ", 3)}}.Encode()
	b.Run("DecodePlain", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodePlain(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonv2", func(b *testing.B) {
		for b.Loop() {
			var p Plain
			if err := jsonv2.Unmarshal([]byte(s), &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
