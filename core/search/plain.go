package search

import (
	"fmt"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
	var has [NumCols]bool
	for c := Col(0); c < NumCols; c++ {
		has[c] = *p.col(c) != nil
	}
	return chosenCol(p.Failed, &has)
}

// chosenCol returns the column whose part a query-free snippet shows,
// among the columns that have one (has), by MakeSnippet's preferences.
func chosenCol(failed bool, has *[NumCols]bool) (Col, bool) {
	prefs := [NumCols]Col{ColBody, ColMore, ColName, ColErr}
	if failed {
		prefs = [NumCols]Col{ColMore, ColBody, ColErr, ColName}
	}
	for _, c := range prefs {
		if has[c] {
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

// DecodePlain reads a Plain that Encode wrote (or PostgreSQL merged). A
// search of operators alone decodes one per hit: the JSON Encode writes and
// jsonb prints is read without reflection (decodePlainFast), anything else
// by the JSON package.
func DecodePlain(s string) (Plain, error) {
	if p, ok := decodePlainFast(s); ok {
		return p, nil
	}
	var p Plain
	if err := jsonv2.Unmarshal([]byte(s), &p); err != nil {
		return Plain{}, fmt.Errorf("stored snippet %.80q: %w", s, err)
	}
	return p, nil
}

// PlainSnippet returns DecodePlain(s).Snippet() (or DecodePlain's error):
// the query-free snippet of a stored Plain. A page of a search of
// operators alone makes one per hit: for the JSON Encode writes and jsonb
// prints it allocates nothing (the snippet's label and text are parts of
// s, as DecodePlain's are).
func PlainSnippet(s string) (Snippet, error) {
	f, ok := decodePlainParts(s)
	if !ok {
		p, err := DecodePlain(s)
		if err != nil {
			return Snippet{}, err
		}
		return p.Snippet(), nil
	}
	c, ok := chosenCol(f.failed, &f.has)
	if !ok {
		return Snippet{Highlights: [][2]int{}}, nil
	}
	return Snippet{Label: f.parts[c].Label, Text: f.parts[c].Text, Highlights: [][2]int{}}, nil
}

// plainParts is a Plain as decodePlainParts reads it: its parts by
// column, has telling which it has.
type plainParts struct {
	failed bool
	has    [NumCols]bool
	parts  [NumCols]PlainPart
}

// decodePlainFast reads the JSON of a Plain as Encode writes it or jsonb
// prints it: an object of the keys f (a boolean) and n, b, m, e (objects of
// the strings l and t), each at most once, white space between tokens.
// ok is false for anything else (another key, a null, a duplicate,
// invalid UTF-8…): DecodePlain then leaves it to the JSON package, so
// what this accepts it reads as jsonv2.Unmarshal does.
func decodePlainFast(s string) (p Plain, ok bool) {
	f, ok := decodePlainParts(s)
	if !ok {
		return Plain{}, false
	}
	p.Failed = f.failed
	for c := Col(0); c < NumCols; c++ {
		if f.has[c] {
			part := f.parts[c]
			*p.col(c) = &part
		}
	}
	return p, true
}

// decodePlainParts is decodePlainFast's reader: it reads the parts into a
// plainParts, allocating nothing for a string without escapes.
func decodePlainParts(s string) (p plainParts, ok bool) {
	d := plainScanner{s: s}
	if !d.byte('{') {
		return plainParts{}, false
	}
	if d.byte('}') {
		return p, d.end()
	}
	seen := 0
	for {
		key, ok := d.str()
		if !ok || len(key) != 1 || !d.byte(':') {
			return plainParts{}, false
		}
		var bit int
		switch key[0] {
		case 'f':
			bit = 1
			if p.failed, ok = d.boolean(); !ok {
				return plainParts{}, false
			}
		case 'n', 'b', 'm', 'e':
			c := ColName
			switch key[0] {
			case 'b':
				c = ColBody
			case 'm':
				c = ColMore
			case 'e':
				c = ColErr
			}
			bit = 2 << c
			if p.parts[c], ok = d.part(); !ok {
				return plainParts{}, false
			}
			p.has[c] = true
		default:
			return plainParts{}, false
		}
		if seen&bit != 0 {
			return plainParts{}, false
		}
		seen |= bit
		switch {
		case d.byte(','):
		case d.byte('}'):
			return p, d.end()
		default:
			return plainParts{}, false
		}
	}
}

// plainScanner reads decodePlainFast's JSON from s at i.
type plainScanner struct {
	s string
	i int
}

func (d *plainScanner) space() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

// byte reads c (after white space), or reads nothing and returns false.
func (d *plainScanner) byte(c byte) bool {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (d *plainScanner) end() bool {
	d.space()
	return d.i == len(d.s)
}

// str reads a string: a part of s when it has no escape, else unquoted by
// jsontext.
func (d *plainScanner) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start, escaped := d.i, false
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			if !escaped {
				v := d.s[start : d.i-1]
				return v, utf8.ValidString(v)
			}
			b, err := jsontext.AppendUnquote(nil, d.s[start-1:d.i])
			return string(b), err == nil
		case c == '\\':
			escaped = true
			d.i++ // the escaped byte (a quote or a backslash ends no string)
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

func (d *plainScanner) boolean() (v, ok bool) {
	d.space()
	switch {
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return true, true
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return false, true
	}
	return false, false
}

// part reads a PlainPart: an object of l and t, each at most once.
func (d *plainScanner) part() (part PlainPart, ok bool) {
	if !d.byte('{') {
		return PlainPart{}, false
	}
	if d.byte('}') {
		return part, true
	}
	var l, t bool
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return PlainPart{}, false
		}
		v, ok := d.str()
		switch {
		case !ok:
			return PlainPart{}, false
		case key == "l" && !l:
			part.Label, l = v, true
		case key == "t" && !t:
			part.Text, t = v, true
		default:
			return PlainPart{}, false
		}
		switch {
		case d.byte(','):
		case d.byte('}'):
			return part, true
		default:
			return PlainPart{}, false
		}
	}
}
