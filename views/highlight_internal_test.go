package views

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

// TestHighlightCache_ownedAndTransparent: the memo of highlighted code is
// a value its owner makes and hands to pages through the Reader (none is
// shared by the package): the tokens are the same with it or without it,
// the second highlight of the same text is the memo's, and a fold's render
// context carries its Reader's memo.
func TestHighlightCache_ownedAndTransparent(t *testing.T) {
	lines := []string{"package main", "", "func main() { println(\"hi\") }"}
	want := highlight("go", "main.go", lines)
	var none *HighlightCache
	if got := none.highlight("go", "main.go", lines); !cmp.Equal(got, want) {
		t.Errorf("without a memo the tokens differ: %v", got)
	}
	c := NewHighlightCache(2)
	first := c.highlight("go", "main.go", lines)
	second := c.highlight("go", "main.go", lines)
	if !cmp.Equal(first, want) || !cmp.Equal(second, want) {
		t.Errorf("with a memo the tokens differ: %v, %v", first, second)
	}
	if len(c.m) != 1 || &first[0] != &second[0] {
		t.Errorf("the memo holds %d texts and gave the second highlight anew, want 1 text given twice", len(c.m))
	}
	for _, s := range []string{"a", "b", "c"} {
		c.highlight("", s+".txt", []string{s})
	}
	if len(c.m) > 2 {
		t.Errorf("the memo holds %d texts, past its bound of 2", len(c.m))
	}
	if other := NewHighlightCache(2); len(other.m) != 0 {
		t.Error("a new memo starts with another's texts")
	}

	tl := NewTimeline(core.SessionHeader{ID: "s"}, nil)
	tl.SetReader(Reader{Highlights: c})
	if r := NewR(tl, SessionLinks("s")); r.Highlights != c {
		t.Error("the render context does not carry its Reader's memo")
	}
}
