package redact

// Secrets split across strings. A tool may keep one text as many strings:
// read's meta has one string per line ({"lines":[{"number":1,"text":…},…]}),
// grep's meta one per matching line, an MCP result one content block per
// line, a call's arguments an array of lines. Redacting each string alone
// misses a secret whose match spans lines — a PEM private key's body lines
// come after the line that holds its BEGIN marker. So before the strings of
// a document are redacted one by one, the strings that sit at the same
// place in the elements of one array (the "text" of every element of
// "lines", or every element of an array of strings) are joined with
// newlines, in order, and the rules run over the joined text: a hit that
// spans two or more elements redacts every element it touches, its marker
// where it starts, the rest of its bytes dropped.
//
// Only a rule that can match a newline can span elements (a newline joins
// them); which rules can is read off their syntax (canMatchNewline), so the
// joined pass runs only on documents holding a keyword of such a rule (the
// private key rule's "PRIVATE KEY") or two lines shaped like a key's body
// (keybody.go), or on every document when a user rule without keywords
// can.

import (
	"encoding/json"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
)

// canMatchNewline reports whether a hit of ru may hold a newline: some
// match of its expression, or of the submatches it replaces when it has
// any (zero-width assertions such as ^ and $ hold none).
func canMatchNewline(ru rule) bool {
	// ru.re compiled, so it parses; Perl flags are regexp.Compile's.
	tree, err := syntax.Parse(ru.re.String(), syntax.Perl)
	if err != nil {
		return true
	}
	var can func(*syntax.Regexp) bool
	can = func(n *syntax.Regexp) bool {
		switch n.Op {
		case syntax.OpAnyChar:
			return true
		case syntax.OpLiteral:
			for _, c := range n.Rune {
				if c == '\n' {
					return true
				}
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(n.Rune); i += 2 {
				if n.Rune[i] <= '\n' && '\n' <= n.Rune[i+1] {
					return true
				}
			}
		}
		for _, s := range n.Sub {
			if can(s) {
				return true
			}
		}
		return false
	}
	if len(ru.groups) == 0 {
		return can(tree)
	}
	replaced := map[int]bool{}
	for _, g := range ru.groups {
		replaced[g] = true
	}
	var inGroup func(*syntax.Regexp) bool
	inGroup = func(n *syntax.Regexp) bool {
		if n.Op == syntax.OpCapture && replaced[n.Cap] {
			return can(n)
		}
		for _, s := range n.Sub {
			if inGroup(s) {
				return true
			}
		}
		return false
	}
	return inGroup(tree)
}

// spansLines reports whether doc may hold a match of a rule that can
// span lines, and so needs the joined pass.
func (r *Redactor) spansLines(doc []byte) bool {
	return r.multiAlways || r.multiKW.list != nil && len(find(&r.multiKW, doc, nil, true)) > 0 || hasKeyLines(doc)
}

// crossKey is the key of a string's place in a document: object keys
// prefixed "k", array indexes "i", joined by NUL.
func crossKey(path []string) string { return strings.Join(path, "\x00") }

// siblingOverrides returns, for a valid JSON document, the replacement of
// every string that a hit spanning sibling strings touches, keyed by its
// place (crossKey). The kinds of the hits it applies are recorded on w.
func (w *docWalk) siblingOverrides(doc []byte) map[string]string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	out := map[string]string{}
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				walk(y, append(path, "k"+k))
			}
		case []any:
			w.siblings(x, path, out)
			for i, y := range x {
				walk(y, append(path, "i"+strconv.Itoa(i)))
			}
		}
	}
	walk(v, nil)
	if len(out) == 0 {
		return nil
	}
	return out
}

// leaf is one string of an array element: its place within the element
// and its text.
type leaf struct {
	rel  string
	text string
}

// leaves appends the strings of v reached through objects only (an array
// inside is a sibling group of its own).
func leaves(v any, rel string, out []leaf) []leaf {
	switch x := v.(type) {
	case string:
		out = append(out, leaf{rel, x})
	case map[string]any:
		for k, y := range x {
			out = leaves(y, rel+"\x00k"+k, out)
		}
	}
	return out
}

// member is one string of a sibling group: its element and its span in
// the joined text.
type member struct {
	elem       int
	start, end int
}

// siblings runs the joined pass over the sibling groups of one array at
// path, adding the replacements of the strings that spanning hits touch.
func (w *docWalk) siblings(arr []any, path []string, out map[string]string) {
	if len(arr) < 2 {
		return
	}
	groups := map[string][]int{} // rel → indexes into texts
	var order []string
	var texts []leaf
	var elems []int
	for i, el := range arr {
		for _, l := range leaves(el, "", nil) {
			if _, ok := groups[l.rel]; !ok {
				order = append(order, l.rel)
			}
			groups[l.rel] = append(groups[l.rel], len(texts))
			texts = append(texts, l)
			elems = append(elems, i)
		}
	}
	base := crossKey(path)
	for _, rel := range order {
		idx := groups[rel]
		if len(idx) < 2 {
			continue
		}
		var b strings.Builder
		members := make([]member, len(idx))
		for n, ti := range idx {
			if n > 0 {
				b.WriteByte('\n')
			}
			members[n] = member{elem: elems[ti], start: b.Len()}
			b.WriteString(texts[ti].text)
			members[n].end = b.Len()
		}
		joined := b.String()
		hits := w.r.find(joined, w.envFile)
		touched := spanning(hits, members)
		if touched == nil {
			continue
		}
		applied := make([]bool, len(hits))
		first := 0 // hits are ordered and disjoint: none before it reaches the member
		for n, m := range members {
			if !touched[n] {
				continue
			}
			for first < len(hits) && hits[first].End <= m.start {
				first++
			}
			var p strings.Builder
			pos := m.start
			for h := first; h < len(hits) && hits[h].Start < m.end; h++ {
				hit := hits[h]
				if from := max(hit.Start, m.start); from >= pos {
					p.WriteString(joined[pos:from])
					// The marker goes where the hit starts: in this
					// member, or in the first it touches.
					if hit.Start >= m.start || n == 0 || hit.Start >= members[n-1].end {
						p.WriteString(Marker(hit.Kind))
					}
				}
				pos = max(pos, min(hit.End, m.end))
				applied[h] = true
			}
			p.WriteString(joined[min(pos, m.end):m.end])
			key := base
			if key != "" {
				key += "\x00"
			}
			out[key+"i"+strconv.Itoa(m.elem)+rel] = p.String()
		}
		for h, ok := range applied {
			if ok {
				w.kinds = append(w.kinds, hits[h].Kind)
			}
		}
	}
}

// spanning marks the members that a hit touching two or more members
// touches; nil when no hit does.
func spanning(hits []Hit, members []member) []bool {
	var touched []bool
	for _, h := range hits {
		first, last := -1, -1
		// Members are ordered: skip those that end before the hit.
		from := sort.Search(len(members), func(n int) bool { return members[n].end >= h.Start })
		for n := from; n < len(members) && members[n].start < h.End; n++ {
			if m := members[n]; h.Start < m.end || m.start == m.end && h.Start <= m.start {
				if first < 0 {
					first = n
				}
				last = n
			}
		}
		if first < 0 || last == first {
			continue
		}
		if touched == nil {
			touched = make([]bool, len(members))
		}
		for n := first; n <= last; n++ {
			touched[n] = true
		}
	}
	return touched
}
