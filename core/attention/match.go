package attention

import (
	"slices"
	"strings"

	"prism/core/search"
)

// Doc is one card's search document held in memory, as the index files
// it: its kind, tool, failure and the terms of each column (a phrase
// matches inside one column).
type Doc struct {
	Kind    string
	Tool    string
	IsError bool
	Code    string
	cols    [search.NumCols][]string
}

// NewDoc builds the document of a card from its search.Part facts and
// sections.
func NewDoc(kind, tool string, isError bool, code string, secs []search.Section) *Doc {
	d := &Doc{Kind: kind, Tool: tool, IsError: isError, Code: code}
	d.Add(secs)
	return d
}

// Add files more sections (a result completing its call's card).
func (d *Doc) Add(secs []search.Section) {
	for _, s := range secs {
		if s.Col < 0 || s.Col >= search.NumCols {
			continue
		}
		search.EachToken(s.Text, func(t search.Token) bool {
			d.cols[s.Col] = append(d.cols[s.Col], t.Term)
			return true
		})
	}
}

// Match reports whether the document satisfies the query, as the engines'
// search decides it for one document: every clause holds; a clause holds
// when any of its terms matches, or, negated, when none does.
func Match(q *search.Query, d *Doc) bool {
	if q == nil || len(q.Clauses) == 0 {
		return false
	}
	for _, c := range q.Clauses {
		any := slices.ContainsFunc(c.Terms, func(t search.Term) bool { return d.term(t) })
		if any == c.Not {
			return false
		}
	}
	return true
}

func (d *Doc) term(t search.Term) bool {
	switch t.Field {
	case search.FieldText:
		for _, col := range d.cols {
			if phraseIn(col, t.Words, t.Prefix) {
				return true
			}
		}
		return false
	case search.FieldTool:
		if d.Tool == "" {
			return false
		}
		if t.Prefix {
			return strings.HasPrefix(strings.ToLower(d.Tool), strings.ToLower(t.Value))
		}
		return strings.EqualFold(d.Tool, t.Value)
	case search.FieldError:
		if !d.IsError {
			return false
		}
		switch {
		case t.Prefix:
			return strings.HasPrefix(strings.ToLower(d.Code), strings.ToLower(t.Value))
		case t.Value == "":
			return true
		}
		return strings.EqualFold(d.Code, t.Value)
	case search.FieldKind:
		return d.Kind == t.Value
	}
	// Session-level and note operators are refused by ParseQuery.
	return false
}

// phraseIn reports whether words appear in terms next to each other, in
// order (the last word a prefix when prefix is set).
func phraseIn(terms, words []string, prefix bool) bool {
	if len(words) == 0 {
		return false
	}
	n := len(words)
	for i := 0; i+n <= len(terms); i++ {
		ok := true
		for j, w := range words {
			got := terms[i+j]
			if j == n-1 && prefix {
				ok = strings.HasPrefix(got, w)
			} else {
				ok = got == w
			}
			if !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
