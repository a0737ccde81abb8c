package search

import (
	"fmt"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Plain is what a document's query-free snippet is made from: the snippet
// MakeSnippet shows when a query has no words to mark (a query of
// operators alone: tool:, error:, kind:…) — the start of the section that
// says most. An engine keeps it with the document when it files it, so
// such a search shows its page without reading the events back.
//
// It holds, for each column, the start of the column's first section with
// text (as MakeSnippet cuts it), and whether the document has an error
// section: all MakeSnippet's choice depends on. A card is filed in two
// steps, its call and then its result: PlainOf(call).Then(PlainOf(result))
// equals PlainOf of the call's sections followed by the result's.
//
// Its JSON names each column by one letter (n, b, m, e; f for Failed), so
// PostgreSQL can merge a call's with its result's (jsonb ||) in the
// statement that pairs them.
type Plain struct {
	Failed bool       `json:"f,omitempty"`
	Name   *PlainPart `json:"n,omitempty"`
	Body   *PlainPart `json:"b,omitempty"`
	More   *PlainPart `json:"m,omitempty"`
	Err    *PlainPart `json:"e,omitempty"`
}

// PlainPart is the start of a section, cut as a snippet shows it.
type PlainPart struct {
	Label string `json:"l"`
	Text  string `json:"t"`
}

// col returns the part of column c.
func (p *Plain) col(c Col) **PlainPart {
	switch c {
	case ColName:
		return &p.Name
	case ColBody:
		return &p.Body
	case ColMore:
		return &p.More
	default:
		return &p.Err
	}
}

// PlainOf returns what the query-free snippet of a document made of secs
// is made from.
func PlainOf(secs []Section) Plain {
	var p Plain
	for _, s := range secs {
		if s.Col == ColErr {
			p.Failed = true
		}
		if s.Col < 0 || s.Col >= NumCols {
			continue
		}
		part := p.col(s.Col)
		if *part != nil || strings.TrimSpace(s.Text) == "" {
			continue
		}
		w := window(s.Label, s.Text, nil)
		*part = &PlainPart{Label: w.Label, Text: w.Text}
	}
	return p
}

// Then returns the Plain of p's document's sections followed by next's:
// a card's call (p) completed by its result (next).
func (p Plain) Then(next Plain) Plain {
	out := p
	out.Failed = p.Failed || next.Failed
	for c := Col(0); c < NumCols; c++ {
		if part := out.col(c); *part == nil {
			*part = *next.col(c)
		}
	}
	return out
}

// chosen returns the column whose part the snippet shows (ok false when
// the document has no text), by MakeSnippet's preferences.
func (p *Plain) chosen() (Col, bool) {
	prefs := []Col{ColBody, ColMore, ColName, ColErr}
	if p.Failed {
		prefs = []Col{ColMore, ColBody, ColErr, ColName}
	}
	for _, c := range prefs {
		if *p.col(c) != nil {
			return c, true
		}
	}
	return 0, false
}

// Snippet returns the query-free snippet: what MakeSnippet(secs, nil)
// returns for the sections p was made from.
func (p Plain) Snippet() Snippet {
	c, ok := p.chosen()
	if !ok {
		return Snippet{Highlights: [][2]int{}}
	}
	part := *p.col(c)
	return Snippet{Label: part.Label, Text: part.Text, Highlights: [][2]int{}}
}

// Reduced returns p with only the part its snippet shows: the same
// Snippet, stored smaller, for a document nothing will be added to.
func (p Plain) Reduced() Plain {
	c, ok := p.chosen()
	if !ok {
		return Plain{}
	}
	var out Plain
	*out.col(c) = *p.col(c)
	return out
}

// Encode writes p as it is stored (JSON; an engine's search_docs.snip).
func (p Plain) Encode() string {
	b, err := jsonv1.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("search: encode a snippet: %v", err)) // strings and bools only
	}
	return string(b)
}

// DecodePlain reads a Plain that Encode wrote (or PostgreSQL merged).
func DecodePlain(s string) (Plain, error) {
	var p Plain
	if err := jsonv2.Unmarshal([]byte(s), &p); err != nil {
		return Plain{}, fmt.Errorf("stored snippet %.80q: %w", s, err)
	}
	return p, nil
}
