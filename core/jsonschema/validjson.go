package jsonschema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ValidJSON reports, reading JSON text itself, that the tree json.Unmarshal
// makes of data passes Validate — without building the tree. It is a fast
// path for the common case: true means Validate would return no violation;
// false means the value may be invalid (or is too deep, or data is not the
// lossless, valid JSON ValidJSON expects), and the caller validates the
// tree to get the violations, in Validate's words. data must be valid JSON
// whose numbers are lossless (core.Snapshot's output); other text may only
// give false.
func (s *Schema) ValidJSON(data []byte) bool {
	p := textValidator{d: data}
	p.space()
	if !p.value(s) {
		return false
	}
	p.space()
	return p.i == len(p.d)
}

// maxTextDepth bounds ValidJSON's recursion; deeper values take Validate's
// stack-safe walk.
const maxTextDepth = 128

// textValidator is a cursor over JSON text, validating values as it passes
// them.
type textValidator struct {
	d     []byte
	i     int
	depth int
}

func (p *textValidator) space() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value validates the value at the cursor against s and moves past it.
func (p *textValidator) value(s *Schema) bool {
	if p.depth >= maxTextDepth || p.i >= len(p.d) {
		return false
	}
	if s.oneOf != nil {
		start, matches := p.i, 0
		for _, b := range s.oneOf {
			p.i = start
			if p.value(b) {
				matches++
			}
		}
		p.i = start
		return matches == 1 && p.skip()
	}
	c := p.d[p.i]
	switch s.typ {
	case tAny:
		return p.skip() // the text is lossless JSON
	case tObject:
		return c == '{' && p.object(s)
	case tArray:
		return c == '[' && p.array(s)
	case tString:
		if c != '"' {
			return false
		}
		start := p.i
		if !p.skip() {
			return false
		}
		if s.enum == nil && s.constV == nil {
			return true
		}
		str, ok := tokenText(p.d[start:p.i])
		if !ok {
			return false
		}
		if s.constV != nil && s.constV.str != string(str) {
			return false
		}
		return s.enum == nil || slices.ContainsFunc(s.enum, func(n *node) bool { return n.str == string(str) })
	case tNumber, tInteger:
		if c != '-' && (c < '0' || c > '9') {
			return false
		}
		start := p.i
		for p.i < len(p.d) && isNumberByte(p.d[p.i]) {
			p.i++
		}
		f, err := strconv.ParseFloat(string(p.d[start:p.i]), 64)
		if err != nil || !isJSONNumber(f) || s.typ == tInteger && !isInteger(f) {
			return false
		}
		if s.constV != nil && s.constV.num != f {
			return false
		}
		return s.enum == nil || slices.ContainsFunc(s.enum, func(n *node) bool { return n.num == f })
	case tBoolean:
		var b bool
		switch {
		case bytes.HasPrefix(p.d[p.i:], []byte("true")):
			b, p.i = true, p.i+4
		case bytes.HasPrefix(p.d[p.i:], []byte("false")):
			p.i += 5
		default:
			return false
		}
		if s.constV != nil && s.constV.b != b {
			return false
		}
		return s.enum == nil || slices.ContainsFunc(s.enum, func(n *node) bool { return n.b == b })
	case tNull:
		if !bytes.HasPrefix(p.d[p.i:], []byte("null")) {
			return false
		}
		p.i += 4
		return true
	}
	return false
}

// object validates an object against s: its declared properties against
// their schemas, the required ones present, no undeclared one when s is
// closed (whose violation only the tree walk words).
func (p *textValidator) object(s *Schema) bool {
	p.depth++
	defer func() { p.depth-- }()
	p.i++ // {
	var seenBuf [8]bool
	var seen []bool
	if n := len(s.required); n <= len(seenBuf) {
		seen = seenBuf[:n]
	} else {
		seen = make([]bool, n)
	}
	p.space()
	if p.i < len(p.d) && p.d[p.i] == '}' {
		p.i++
	} else {
		for {
			p.space()
			if p.i >= len(p.d) || p.d[p.i] != '"' {
				return false
			}
			start := p.i
			if !p.skip() {
				return false
			}
			key, ok := tokenText(p.d[start:p.i])
			if !ok {
				return false
			}
			p.space()
			if p.i >= len(p.d) || p.d[p.i] != ':' {
				return false
			}
			p.i++
			p.space()
			if prop := s.property(key); prop != nil { // string(key) in a lookup does not allocate
				if !p.value(prop) {
					return false
				}
			} else if s.closed {
				return false
			} else if !p.skip() { // undeclared: lossless text
				return false
			}
			for r, name := range s.required {
				if name == string(key) {
					seen[r] = true
				}
			}
			p.space()
			if p.i >= len(p.d) {
				return false
			}
			if p.d[p.i] == '}' {
				p.i++
				break
			}
			if p.d[p.i] != ',' {
				return false
			}
			p.i++
		}
	}
	for _, ok := range seen {
		if !ok {
			return false
		}
	}
	return true
}

// property returns the schema of s's declared property name, or nil.
func (s *Schema) property(name []byte) *Schema {
	if s.propIndex != nil {
		if i, ok := s.propIndex[string(name)]; ok {
			return s.props[i].schema
		}
		return nil
	}
	for i := range s.props {
		if s.props[i].name == string(name) {
			return s.props[i].schema
		}
	}
	return nil
}

// array validates an array's items against s.items (any lossless items
// when s has none).
func (p *textValidator) array(s *Schema) bool {
	if s.items == nil {
		return p.skip()
	}
	p.depth++
	defer func() { p.depth-- }()
	p.i++ // [
	p.space()
	if p.i < len(p.d) && p.d[p.i] == ']' {
		p.i++
		return true
	}
	for {
		p.space()
		if !p.value(s.items) {
			return false
		}
		p.space()
		if p.i >= len(p.d) {
			return false
		}
		if p.d[p.i] == ']' {
			p.i++
			return true
		}
		if p.d[p.i] != ',' {
			return false
		}
		p.i++
	}
}

// skip moves past the value at the cursor without validating it.
func (p *textValidator) skip() bool {
	if p.i >= len(p.d) {
		return false
	}
	switch p.d[p.i] {
	case '"':
		return p.skipString()
	case '{', '[':
		depth := 0
		for p.i < len(p.d) {
			switch p.d[p.i] {
			case '"':
				if !p.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return true
				}
			}
			p.i++
		}
		return false
	}
	start := p.i // a number, true, false or null: up to the next delimiter
	for p.i < len(p.d) && !isDelimiter(p.d[p.i]) {
		p.i++
	}
	return p.i > start
}

// skipString moves past the string token at the cursor.
func (p *textValidator) skipString() bool {
	for j := p.i + 1; j <= len(p.d); {
		k := bytes.IndexByte(p.d[j:], '"')
		if k < 0 {
			return false
		}
		q := j + k
		n := 0
		for b := q - 1; b > p.i && p.d[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			p.i = q + 1
			return true
		}
		j = q + 1
	}
	return false
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// tokenText returns the text a JSON string token denotes, as encoding/json
// decodes it (escapes resolved, each invalid UTF-8 byte U+FFFD): the bytes
// between the quotes when there is nothing to resolve, without copying.
func tokenText(tok []byte) ([]byte, bool) {
	if bytes.IndexByte(tok, '\\') < 0 && utf8.Valid(tok) {
		return tok[1 : len(tok)-1], true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return nil, false
	}
	return []byte(s), true
}
