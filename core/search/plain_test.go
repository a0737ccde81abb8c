package search_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core/search"
)

// plainSections are sections of every column, with and without text.
var plainSections = []search.Section{
	{Col: search.ColName, Label: "tool", Text: "grep"},
	{Col: search.ColBody, Label: "arguments", Text: `{"pattern": "needle",` + "\n\t" + `"path": "."}`},
	{Col: search.ColBody, Label: "text", Text: "  \n\t "},
	{Col: search.ColMore, Label: "result", Text: strings.Repeat("a long result line ", 30)},
	{Col: search.ColMore, Label: "reasoning", Text: "second of its column"},
	{Col: search.ColErr, Label: "error", Text: "ENOENT no such file"},
	{Col: search.ColErr, Label: "failure", Text: ""},
	{Col: search.ColName, Label: "title", Text: "\u202eforged\x00 title"},
	{Col: search.ColBody, Label: "text", Text: "later body"},
}

// TestPlainIsMakeSnippetWithoutWords: for every subset of the sections
// (in order) and every split of it into a call and its result, the
// stored snippet — merged, reduced, through JSON, and through jsonb's
// merge of the two halves — is what MakeSnippet shows for a query
// without words.
func TestPlainIsMakeSnippetWithoutWords(t *testing.T) {
	n := len(plainSections)
	for mask := 0; mask < 1<<n; mask++ {
		var secs []search.Section
		for i := range n {
			if mask&(1<<i) != 0 {
				secs = append(secs, plainSections[i])
			}
		}
		want := search.MakeSnippet(secs, nil)
		for split := 0; split <= len(secs); split++ {
			call, result := search.PlainOf(secs[:split]), search.PlainOf(secs[split:])
			merged := call.Then(result)
			if got := merged.Snippet(); !cmp.Equal(got, want) {
				t.Fatalf("sections %v split at %d: snippet %+v, want %+v", secs, split, got, want)
			}
			if got := merged.Reduced().Snippet(); !cmp.Equal(got, want) {
				t.Fatalf("sections %v split at %d: reduced snippet %+v, want %+v", secs, split, got, want)
			}
			// PostgreSQL merges the two as result || call: the call's
			// columns win, and f is either's.
			var a, b map[string]json.RawMessage
			for x, p := range map[*map[string]json.RawMessage]search.Plain{&a: result, &b: call} {
				raw, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, x); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range b {
				a[k] = v
			}
			raw, _ := json.Marshal(a)
			var back search.Plain
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			if got := back.Snippet(); !cmp.Equal(got, want) {
				t.Fatalf("sections %v split at %d: merged as JSON %s, snippet %+v, want %+v", secs, split, raw, got, want)
			}
		}
	}
}
