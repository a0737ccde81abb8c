package jsonschema

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// vframe is one explicit call frame of the stack-safe validator.
type vframe struct {
	s       *Schema
	v       any
	m       map[string]any // object frames
	a       []any          // array frames
	key     string         // path segment: property key (seg == segKey)
	idx     int            // path segment: item index (seg == segIndex)
	next    int            // next child (property, item or branch) to visit
	start   int            // len(out) when the frame started
	matches int            // oneOf frames: branches that matched; object frames: declared properties present
	seg     uint8
	started bool
	quiet   bool // inside a oneOf branch: only pass/fail matters
}

const (
	segNone uint8 = iota
	segKey
	segIndex
)

// Validate returns every violation of v against the schema, in dsh's walk
// order (validateJsonSchemaValue); nil means valid. v is a generic JSON tree
// (see "Values" in the package documentation). root is the diagnostic root label:
// "" for tool arguments (printed as "arguments", with child paths written
// without a leading dot, e.g. "title" or "[0]") and "value" for tool outputs
// (e.g. "value.lines[1]").
//
// Where dsh iterates the value's own keys — the undeclared-property check of
// an object with additionalProperties: false — a Go map has no order, so the
// keys are visited in a fixed order instead: array-index keys ("0", "42")
// first in ascending numeric order, as JavaScript orders them, then the other
// keys in ascending byte order.
//
// Validate never panics on any value and uses an explicit stack, so deep
// values and schemas are safe. Validating a valid value of modest depth does
// not allocate; strings are built only for reported violations.
func (s *Schema) Validate(v any, root string) []string {
	var buf [8]vframe
	stack := append(buf[:0], vframe{s: s, v: v})
	var out []string
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		sc := f.s
		failed := false
		if !f.started {
			f.started = true
			f.start = len(out)
			switch {
			case sc.oneOf != nil:
				// Visit every branch with the same value and path.
			case sc.typ == tAny:
				if !lossless(f.v) {
					failed = true
					if !f.quiet {
						out = append(out, quoted(stack, root, " must be a lossless JSON value"))
					}
				}
				goto done
			case sc.typ == tObject:
				m, ok := f.v.(map[string]any)
				if !ok || m == nil {
					failed = true
					if !f.quiet {
						out = append(out, quoted(stack, root, " must be an object"))
					}
					goto done
				}
				f.m = m
				for _, k := range sc.required {
					if _, ok := m[k]; !ok {
						if f.quiet {
							failed = true
							goto done
						}
						out = append(out, `missing required property "`+propertyPath(pathOf(stack, root), k)+`"`)
					}
				}
			case sc.typ == tArray:
				a, ok := f.v.([]any)
				if !ok || a == nil {
					failed = true
					if !f.quiet {
						out = append(out, quoted(stack, root, " must be an array"))
					}
					goto done
				}
				f.a = a
			default:
				if suffix := checkScalar(sc, f.v); suffix != "" {
					failed = true
					if !f.quiet {
						out = append(out, quoted(stack, root, suffix))
					}
				}
				goto done
			}
		}

		// Children, then the container's tail checks.
		switch {
		case sc.oneOf != nil:
			if f.next < len(sc.oneOf) {
				b := sc.oneOf[f.next]
				f.next++
				stack = append(stack, vframe{s: b, v: f.v, quiet: true})
				continue
			}
			if f.matches != 1 {
				failed = true
				if !f.quiet {
					out = append(out, quoted(stack, root, " must match exactly one oneOf branch (matched "+strconv.Itoa(f.matches)+")"))
				}
			}
		case sc.typ == tObject:
			pushed := false
			for f.next < len(sc.props) {
				p := &sc.props[f.next]
				f.next++
				if cv, ok := f.m[p.name]; ok {
					f.matches++ // object frames count the declared properties present
					stack = append(stack, vframe{s: p.schema, v: cv, seg: segKey, key: p.name, quiet: f.quiet})
					pushed = true
					break
				}
			}
			if pushed {
				continue
			}
			undeclared := len(f.m) - f.matches
			if sc.closed {
				if undeclared > 0 {
					failed = true
					if f.quiet {
						goto done
					}
					keys := make([]string, 0, undeclared)
					for k := range f.m {
						if !sc.declared(k) {
							keys = append(keys, k)
						}
					}
					sortKeys(keys)
					base := pathOf(stack, root)
					for _, k := range keys {
						out = append(out, `"`+propertyPath(base, k)+`" is not a declared property (additionalProperties: false)`)
					}
				}
			}
			if len(out) > f.start {
				failed = true
			} else if !failed && undeclared > 0 {
				// Declared children passed, so they are lossless; check the rest.
				for k, cv := range f.m {
					if !sc.declared(k) && !lossless(cv) {
						failed = true
						if !f.quiet {
							out = append(out, quoted(stack, root, " must be a lossless JSON object"))
						}
						break
					}
				}
			}
		case sc.typ == tArray:
			if sc.items != nil {
				if f.next < len(f.a) {
					i := f.next
					f.next++
					stack = append(stack, vframe{s: sc.items, v: f.a[i], seg: segIndex, idx: i, quiet: f.quiet})
					continue
				}
				failed = len(out) > f.start
			} else {
				for _, e := range f.a {
					if !lossless(e) {
						failed = true
						if !f.quiet {
							out = append(out, quoted(stack, root, " must be a dense lossless JSON array"))
						}
						break
					}
				}
			}
		}

	done:
		if failed && f.quiet {
			// A failing frame inside a oneOf branch fails the whole branch:
			// unwind to the branch's oneOf frame without counting a match.
			stack = stack[:len(stack)-1]
			for stack[len(stack)-1].s.oneOf == nil {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		stack = stack[:len(stack)-1]
		if !failed && len(stack) > 0 {
			if p := &stack[len(stack)-1]; p.s.oneOf != nil {
				p.matches++
			}
		}
	}
	return out
}

// ValidateArgs validates tool arguments the way dsh's defineTool does before
// running a tool: at the "" root, returning an *ArgsError (dsh ToolArgsError,
// "invalid arguments: ...") that lists every violation, or nil when the
// arguments are valid.
func (s *Schema) ValidateArgs(args any) error {
	if v := s.Validate(args, ""); len(v) > 0 {
		return &ArgsError{Violations: v}
	}
	return nil
}

// checkScalar checks a scalar node and returns the violation suffix ("" when
// the value passes).
func checkScalar(sc *Schema, v any) string {
	switch sc.typ {
	case tString:
		str, ok := v.(string)
		if !ok {
			return " must be a string"
		}
		return enumConst(sc, str, func(n *node) string { return n.str })
	case tNumber, tInteger:
		f, ok := asNumber(v)
		if sc.typ == tNumber {
			if !ok {
				return " must be a number"
			}
			if !isJSONNumber(f) {
				return " must be a finite JSON number"
			}
		} else if !ok || !isJSONNumber(f) || !isInteger(f) {
			return " must be an integer"
		}
		return enumConst(sc, f, func(n *node) float64 { return n.num })
	case tBoolean:
		b, ok := v.(bool)
		if !ok {
			return " must be a boolean"
		}
		return enumConst(sc, b, func(n *node) bool { return n.b })
	case tNull:
		if v != nil {
			return " must be null"
		}
		// enum and const of a null node can only hold null.
	}
	return ""
}

// enumConst checks a scalar value against sc's enum, then its const (dsh's
// order), comparing it with the value of the same type that each enum or const
// node holds (field: str, num or b), and returns the violation suffix ("" when
// the value passes).
func enumConst[T comparable](sc *Schema, v T, field func(*node) T) string {
	if sc.enum != nil && !slices.ContainsFunc(sc.enum, func(e *node) bool { return field(e) == v }) {
		return " must be one of " + sc.enumText
	}
	if sc.constV != nil && field(sc.constV) != v {
		return " must be " + sc.constText
	}
	return ""
}

// isInteger reports a float64 with no fractional part (JavaScript's
// Number.isInteger for finite values).
func isInteger(f float64) bool {
	return f == math.Trunc(f)
}

// asNumber returns the numeric value of a JSON number (float64 or valid
// json.Number text).
func asNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		if !validNumberText(string(x)) {
			return 0, false
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
				return 0, false
			}
		}
		return f, true
	}
	return 0, false
}

// validNumberText reports whether s is a JSON number per RFC 8259.
func validNumberText(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// pathOf builds the raw path of the top frame: the root label followed by
// each frame's segment (".key", or "key" at an empty root, and "[i]").
func pathOf(stack []vframe, root string) string {
	if len(stack) <= 1 {
		return root
	}
	var b strings.Builder
	b.WriteString(root)
	for i := 1; i < len(stack); i++ {
		switch stack[i].seg {
		case segKey:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(stack[i].key)
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(stack[i].idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// quoted formats `"<diagnostic path>"<suffix>` for the top frame.
func quoted(stack []vframe, root, suffix string) string {
	p := pathOf(stack, root)
	if p == "" {
		p = "arguments"
	}
	return `"` + p + `"` + suffix
}

// propertyPath appends a key, without a leading dot at the empty root.
func propertyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// sortKeys orders map keys the way this package visits a Go map: array-index
// keys in ascending numeric order, then the rest in ascending byte order.
func sortKeys(keys []string) {
	slices.SortFunc(keys, func(a, b string) int {
		ai, aok := arrayIndex(a)
		bi, bok := arrayIndex(b)
		switch {
		case aok && bok:
			return cmpUint32(ai, bi)
		case aok:
			return -1
		case bok:
			return 1
		}
		return strings.Compare(a, b)
	})
}

// lossless reports whether v is lossless JSON (dsh isJsonValue) under the
// package's value model: JSON scalars with finite, non-negative-zero numbers,
// and non-nil map[string]any and []any containers without cycles.
func lossless(v any) bool {
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return isJSONNumber(x)
	case json.Number:
		f, ok := asNumber(x)
		return ok && isJSONNumber(f)
	case map[string]any:
		if x == nil {
			return false
		}
		return losslessTree(v)
	case []any:
		if x == nil {
			return false
		}
		return losslessTree(v)
	}
	return false
}

// identity names a container for cycle detection: a map by its pointer, a
// slice by its data pointer and length. A repeated identity on the current
// path means the value unfolds forever.
type identity struct {
	p unsafe.Pointer
	n int
}

// ltask is one step of the lossless walk: enter a container, or leave it.
type ltask struct {
	v     any
	leave bool
}

// losslessTree walks a container iteratively, tracking the containers on the
// current path so that cycles are rejected and shared (DAG) subtrees are not.
func losslessTree(v any) bool {
	var tbuf [32]ltask
	var pbuf [32]identity
	tasks := append(tbuf[:0], ltask{v: v})
	path := pbuf[:0]
	var onPath map[identity]int // used once the path gets deep
	const deep = 64
	for len(tasks) > 0 {
		t := tasks[len(tasks)-1]
		tasks = tasks[:len(tasks)-1]
		if t.leave {
			id := path[len(path)-1]
			path = path[:len(path)-1]
			if onPath != nil {
				if onPath[id]--; onPath[id] == 0 {
					delete(onPath, id)
				}
			}
			continue
		}
		var id identity
		switch x := t.v.(type) {
		case map[string]any:
			id = identity{p: reflect.ValueOf(x).UnsafePointer(), n: -1}
		case []any:
			id = identity{p: unsafe.Pointer(unsafe.SliceData(x)), n: len(x)}
		}
		if onPath != nil {
			if onPath[id] > 0 {
				return false
			}
		} else {
			for _, a := range path {
				if a == id {
					return false
				}
			}
			if len(path) >= deep {
				onPath = make(map[identity]int, 2*deep)
				for _, a := range path {
					onPath[a]++
				}
			}
		}
		path = append(path, id)
		if onPath != nil {
			onPath[id]++
		}
		tasks = append(tasks, ltask{leave: true})
		switch x := t.v.(type) {
		case map[string]any:
			for _, c := range x {
				switch kind := containerKind(c); kind {
				case containerNone:
					if !lossless(c) {
						return false
					}
				case containerNil:
					return false
				case containerFull:
					tasks = append(tasks, ltask{v: c})
				}
			}
		case []any:
			for _, c := range x {
				switch kind := containerKind(c); kind {
				case containerNone:
					if !lossless(c) {
						return false
					}
				case containerNil:
					return false
				case containerFull:
					tasks = append(tasks, ltask{v: c})
				}
			}
		}
	}
	return true
}

const (
	containerNone  = iota // not a JSON container
	containerNil          // a nil map[string]any or []any: not lossless
	containerEmpty        // an empty container: lossless, nothing to walk
	containerFull         // a container to walk
)

// containerKind classifies a child value for the lossless walk.
func containerKind(c any) int {
	switch x := c.(type) {
	case map[string]any:
		switch {
		case x == nil:
			return containerNil
		case len(x) == 0:
			return containerEmpty
		}
		return containerFull
	case []any:
		switch {
		case x == nil:
			return containerNil
		case len(x) == 0:
			return containerEmpty
		}
		return containerFull
	}
	return containerNone
}
