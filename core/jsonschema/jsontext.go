package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// kind is the JavaScript type of a parsed JSON node.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one value of a JSON document parsed with JavaScript's JSON.parse
// semantics: numbers are float64 (so "-0" is negative zero and "1e400" is
// +Inf), and objects keep JavaScript's own-key order.
//
// Trees of nodes are immutable once built and may be shared.
type node struct {
	kind  kind
	b     bool
	num   float64
	str   string
	items []*node // kindArray
	keys  []string
	vals  []*node        // kindObject, parallel to keys
	index map[string]int // kindObject with many keys; nil otherwise
}

// indexThreshold is the key count above which an object gets a lookup map.
const indexThreshold = 16

// get returns the own property key of an object node.
func (n *node) get(key string) (*node, bool) {
	if n.index != nil {
		i, ok := n.index[key]
		if !ok {
			return nil, false
		}
		return n.vals[i], true
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// has reports whether an object node has the own property key.
func (n *node) has(key string) bool {
	_, ok := n.get(key)
	return ok
}

// objectBuilder accumulates object members with JSON.parse's duplicate-key rule:
// a repeated key keeps its first position and takes the last value.
type objectBuilder struct {
	keys  []string
	vals  []*node
	index map[string]int
}

func (b *objectBuilder) set(key string, v *node) {
	if b.index != nil {
		if i, ok := b.index[key]; ok {
			b.vals[i] = v
			return
		}
	} else {
		for i, k := range b.keys {
			if k == key {
				b.vals[i] = v
				return
			}
		}
	}
	b.keys = append(b.keys, key)
	b.vals = append(b.vals, v)
	if b.index != nil {
		b.index[key] = len(b.keys) - 1
	} else if len(b.keys) > indexThreshold {
		b.index = make(map[string]int, len(b.keys)*2)
		for i, k := range b.keys {
			b.index[k] = i
		}
	}
}

// build finishes the object node, applying JavaScript's own-key order:
// array-index keys first in ascending numeric order, then the other keys in
// insertion order.
func (b *objectBuilder) build() *node {
	n := &node{kind: kindObject, keys: b.keys, vals: b.vals}
	if n.keys == nil {
		n.keys, n.vals = []string{}, []*node{}
	}
	reorder := false
	seenName := false
	for _, k := range n.keys {
		if _, ok := arrayIndex(k); ok {
			if seenName {
				reorder = true
				break
			}
		} else {
			seenName = true
		}
	}
	if !reorder {
		// Index keys may still be out of numeric order among themselves.
		last := int64(-1)
		for _, k := range n.keys {
			i, ok := arrayIndex(k)
			if !ok {
				break
			}
			if int64(i) < last {
				reorder = true
				break
			}
			last = int64(i)
		}
	}
	if reorder {
		type member struct {
			key   string
			val   *node
			idx   uint32
			isIdx bool
			pos   int
		}
		ms := make([]member, len(n.keys))
		for i, k := range n.keys {
			idx, ok := arrayIndex(k)
			ms[i] = member{key: k, val: n.vals[i], idx: idx, isIdx: ok, pos: i}
		}
		slices.SortStableFunc(ms, func(a, b member) int {
			switch {
			case a.isIdx && b.isIdx:
				return cmpUint32(a.idx, b.idx)
			case a.isIdx:
				return -1
			case b.isIdx:
				return 1
			default:
				return a.pos - b.pos
			}
		})
		for i, m := range ms {
			n.keys[i], n.vals[i] = m.key, m.val
		}
	}
	if len(n.keys) > indexThreshold {
		n.index = make(map[string]int, len(n.keys))
		for i, k := range n.keys {
			n.index[k] = i
		}
	}
	return n
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// arrayIndex reports whether key is a JavaScript array index (the canonical
// decimal form of an integer in [0, 2^32-2]) and returns it.
func arrayIndex(key string) (uint32, bool) {
	if len(key) == 0 || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > math.MaxUint32-1 {
		return 0, false
	}
	return uint32(v), true
}

// errTrailing reports data after the top-level JSON value.
var errTrailing = errors.New("invalid character after top-level value")

// parseJSON parses one JSON text the way JavaScript's JSON.parse would. It
// uses an explicit stack, so nesting depth is bounded by memory only.
func parseJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type container struct {
		arr   bool
		items []*node
		obj   objectBuilder
		key   string // pending key of an object member
		inKey bool   // the next string token is a key
	}
	var stack []*container
	var root *node
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		var done *node
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '[':
				stack = append(stack, &container{arr: true})
				continue
			case '{':
				stack = append(stack, &container{inKey: true})
				continue
			case ']':
				c := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				items := c.items
				if items == nil {
					items = []*node{}
				}
				done = &node{kind: kindArray, items: items}
			case '}':
				c := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				done = c.obj.build()
			}
		case string:
			if len(stack) > 0 {
				if c := stack[len(stack)-1]; !c.arr && c.inKey {
					c.key, c.inKey = t, false
					continue
				}
			}
			done = &node{kind: kindString, str: t}
		case json.Number:
			f, err := strconv.ParseFloat(string(t), 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, fmt.Errorf("invalid number %q", string(t))
			}
			done = &node{kind: kindNumber, num: f}
		case bool:
			done = &node{kind: kindBool, b: t}
		case nil:
			done = &node{kind: kindNull}
		}
		if len(stack) == 0 {
			root = done
			break
		}
		c := stack[len(stack)-1]
		if c.arr {
			c.items = append(c.items, done)
		} else {
			c.obj.set(c.key, done)
			c.inKey = true
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errTrailing
		}
		return nil, err
	}
	return root, nil
}

// isLossless reports whether a parsed tree is lossless JSON data: every number
// finite and not negative zero. (Parsed trees have no cycles or exotic values.)
func (n *node) isLossless() bool {
	stack := []*node{n}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch cur.kind {
		case kindNumber:
			if !isJSONNumber(cur.num) {
				return false
			}
		case kindArray:
			stack = append(stack, cur.items...)
		case kindObject:
			stack = append(stack, cur.vals...)
		}
	}
	return true
}

// isJSONNumber reports a lossless JSON number: finite and not negative zero.
func isJSONNumber(f float64) bool {
	return !math.IsInf(f, 0) && !math.IsNaN(f) && !(f == 0 && math.Signbit(f))
}

// appendNode appends JSON.stringify(n) without indentation. Object members are
// written in the node's (JavaScript) key order. The walk is iterative.
func appendNode(dst []byte, n *node) []byte {
	type frame struct {
		n *node
		i int
	}
	stack := []frame{{n: n, i: -1}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		cur := top.n
		switch cur.kind {
		case kindNull:
			dst = append(dst, "null"...)
		case kindBool:
			dst = strconv.AppendBool(dst, cur.b)
		case kindNumber:
			dst = appendJSNumber(dst, cur.num)
		case kindString:
			dst = appendJSString(dst, cur.str)
		case kindArray:
			if top.i < 0 {
				dst = append(dst, '[')
			}
			top.i++
			if top.i < len(cur.items) {
				if top.i > 0 {
					dst = append(dst, ',')
				}
				stack = append(stack, frame{n: cur.items[top.i], i: -1})
				continue
			}
			dst = append(dst, ']')
		case kindObject:
			if top.i < 0 {
				dst = append(dst, '{')
			}
			top.i++
			if top.i < len(cur.keys) {
				if top.i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSString(dst, cur.keys[top.i])
				dst = append(dst, ':')
				stack = append(stack, frame{n: cur.vals[top.i], i: -1})
				continue
			}
			dst = append(dst, '}')
		}
		stack = stack[:len(stack)-1]
	}
	return dst
}

// appendJSNumber appends a number the way JavaScript's Number#toString (and so
// JSON.stringify) prints it: shortest round-trip digits, plain notation for
// decimal exponents in [-7, 21), exponent notation ("1e+21", "1.5e-7")
// otherwise. Negative zero prints as "0"; NaN and ±Inf print as "null", as in
// JSON.stringify.
func appendJSNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	// s is "d[.ddd]e±xx".
	e := bytes.IndexByte(s, 'e')
	var digits [24]byte
	nd := 0
	for _, c := range s[:e] {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	k, n := nd, exp+1
	ds := digits[:nd]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, ds...)
		for i := 0; i < n-k; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, ds[:n]...)
		dst = append(dst, '.')
		dst = append(dst, ds[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -n; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, ds...)
	default:
		dst = append(dst, ds[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, ds[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// appendJSString appends a string quoted the way JSON.stringify quotes it: only
// '"', '\\' and control characters are escaped (\b \t \n \f \r, otherwise
// \u00xx in lowercase hex). '<', '>', '&', U+2028 and U+2029 are written as
// is. Invalid UTF-8 bytes, which a JavaScript string cannot hold, are written
// as \ufffd.
func appendJSString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
