package jsonschema

import (
	"strconv"
	"strings"
)

// unsupportedKeyword is the tail of the unknown-keyword violation.
const unsupportedKeyword = " is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"

// schemaTypes lists the subset's type names in dsh's order.
var schemaTypes = [...]string{"object", "array", "string", "number", "integer", "boolean", "null"}

// oneOfSiblings are the keywords that may not sit beside oneOf (and that need
// a type or oneOf), in dsh's order.
var oneOfSiblings = [...]string{"properties", "required", "additionalProperties", "items", "enum", "const"}

// isConstraintKeyword reports the subset's constraint keywords.
func isConstraintKeyword(k string) bool {
	switch k {
	case "type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const":
		return true
	}
	return false
}

// isAnnotationKeyword reports the subset's annotation keywords.
func isAnnotationKeyword(k string) bool {
	switch k {
	case "description", "title", "default", "examples":
		return true
	}
	return false
}

// typeOf maps a type name to its schemaType, or tAny when it is not one.
func typeOf(name string) schemaType {
	switch name {
	case "object":
		return tObject
	case "array":
		return tArray
	case "string":
		return tString
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "boolean":
		return tBoolean
	case "null":
		return tNull
	}
	return tAny
}

// isScalarType reports the types that accept enum and const.
func isScalarType(t schemaType) bool {
	return t >= tString
}

// scalarMatches reports whether a parsed value is valid for a scalar type.
func scalarMatches(t schemaType, v *node) bool {
	switch t {
	case tString:
		return v.kind == kindString
	case tNumber:
		return v.kind == kindNumber && isJSONNumber(v.num)
	case tInteger:
		return v.kind == kindNumber && isJSONNumber(v.num) && isInteger(v.num)
	case tBoolean:
		return v.kind == kindBool
	case tNull:
		return v.kind == kindNull
	}
	return false
}

// sameScalar is JavaScript's SameValueZero over two scalar nodes.
func sameScalar(a, b *node) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindString:
		return a.str == b.str
	case kindNumber:
		return a.num == b.num || (a.num != a.num && b.num != b.num)
	case kindBool:
		return a.b == b.b
	case kindNull:
		return true
	}
	return false
}

// checkTask is one deferred step of the stack-safe schema walk.
type checkTask struct {
	op    uint8 // opEnter, opOneOfTail, opObjectTail
	n     *node
	path  *spath
	props *node // opObjectTail: the node's properties value, or nil when absent
}

const (
	opEnter = iota
	opOneOfTail
	opObjectTail
)

// checkSchema collects every subset violation of a raw schema tree rooted at
// rootPath, in dsh's walk order (assertSupportedJsonSchema). Parsed trees are
// acyclic, so dsh's "is circular" violation cannot occur.
func checkSchema(root *node, rootPath string) []string {
	var violations []string
	tasks := []checkTask{{op: opEnter, n: root, path: &spath{name: rootPath}}}
	for len(tasks) > 0 {
		task := tasks[len(tasks)-1]
		tasks = tasks[:len(tasks)-1]
		path := task.path
		switch task.op {
		case opOneOfTail:
			for _, k := range oneOfSiblings {
				if task.n.has(k) {
					violations = append(violations, path.String()+"."+k+" is not supported beside oneOf")
				}
			}
			continue
		case opObjectTail:
			violations = checkObjectTail(task.n, path, task.props, violations)
			continue
		}

		n := task.n
		if n.kind != kindObject {
			violations = append(violations, path.String()+" must be a schema object")
			continue
		}
		for i, k := range n.keys {
			if isConstraintKeyword(k) {
				continue
			}
			if isAnnotationKeyword(k) {
				if !n.vals[i].isLossless() {
					violations = append(violations, path.String()+"."+k+" annotation must be lossless JSON data")
				}
				continue
			}
			violations = append(violations, path.String()+"."+k+unsupportedKeyword)
		}
		if d, ok := n.get("description"); ok && d.kind != kindString {
			violations = append(violations, path.String()+".description must be a string")
		}
		if t, ok := n.get("title"); ok && t.kind != kindString {
			violations = append(violations, path.String()+".title must be a string")
		}

		typ, hasType := n.get("type")
		oneOf, hasOneOf := n.get("oneOf")
		if hasType && hasOneOf {
			violations = append(violations, path.String()+" cannot declare both type and oneOf")
			continue
		}
		if !hasType && !hasOneOf {
			for _, k := range oneOfSiblings {
				if n.has(k) {
					violations = append(violations, path.String()+"."+k+" requires type or oneOf")
				}
			}
			continue
		}

		if hasOneOf {
			tasks = append(tasks, checkTask{op: opOneOfTail, n: n, path: path})
			if oneOf.kind != kindArray || len(oneOf.items) < 2 {
				violations = append(violations, path.String()+".oneOf must be an array of at least two schemas")
			} else {
				for i := len(oneOf.items) - 1; i >= 0; i-- {
					tasks = append(tasks, checkTask{op: opEnter, n: oneOf.items[i], path: &spath{parent: path, kind: segOneOf, idx: i}})
				}
			}
			continue
		}

		st := tAny
		if typ.kind == kindString {
			st = typeOf(typ.str)
		}
		if st == tAny {
			if typ.kind == kindArray {
				violations = append(violations, path.String()+".type must be a single type string (type arrays are not supported)")
			} else {
				violations = append(violations, path.String()+".type must be one of "+strings.Join(schemaTypes[:], "/"))
			}
			continue
		}
		name := typ.str
		for _, k := range oneOfSiblings {
			var allowed bool
			switch k {
			case "properties", "required", "additionalProperties":
				allowed = st == tObject
			case "items":
				allowed = st == tArray
			default: // enum, const
				allowed = isScalarType(st)
			}
			if !allowed && n.has(k) {
				violations = append(violations, path.String()+"."+k+` is not supported on type "`+name+`"`)
			}
		}

		switch {
		case st == tObject:
			props, hasProps := n.get("properties")
			tasks = append(tasks, checkTask{op: opObjectTail, n: n, path: path, props: props})
			if hasProps {
				if props.kind != kindObject {
					violations = append(violations, path.String()+".properties must be an object of schemas")
				} else {
					for i := len(props.keys) - 1; i >= 0; i-- {
						tasks = append(tasks, checkTask{op: opEnter, n: props.vals[i], path: &spath{parent: path, kind: segProperties, name: props.keys[i]}})
					}
				}
			}
		case st == tArray:
			if items, ok := n.get("items"); ok {
				tasks = append(tasks, checkTask{op: opEnter, n: items, path: &spath{parent: path, kind: segItems}})
			}
		default:
			enum, hasEnum := n.get("enum")
			enumValid := hasEnum && enum.kind == kindArray && len(enum.items) > 0
			if enumValid {
				for _, e := range enum.items {
					if !scalarMatches(st, e) {
						enumValid = false
						break
					}
				}
			}
			if hasEnum && !enumValid {
				violations = append(violations, path.String()+".enum must be a non-empty array of "+name+" values")
			}
			if c, hasConst := n.get("const"); hasConst {
				if !scalarMatches(st, c) {
					violations = append(violations, path.String()+".const must be a "+name+" value")
				} else if enumValid && !enumIncludes(enum, c) {
					violations = append(violations, path.String()+".const must be one of "+path.String()+".enum when both are declared")
				}
			}
		}
	}
	return violations
}

// enumIncludes is Array#includes over an enum array node.
func enumIncludes(enum, v *node) bool {
	for _, e := range enum.items {
		if sameScalar(e, v) {
			return true
		}
	}
	return false
}

// checkObjectTail checks an object node's required and additionalProperties
// after its property schemas have been visited.
func checkObjectTail(n *node, path *spath, props *node, violations []string) []string {
	if req, ok := n.get("required"); ok {
		valid := req.kind == kindArray
		if valid {
			for _, e := range req.items {
				if e.kind != kindString {
					valid = false
					break
				}
			}
		}
		if !valid {
			violations = append(violations, path.String()+".required must be an array of strings")
		} else {
			for _, e := range req.items {
				if props == nil || props.kind != kindObject || !props.has(e.str) {
					violations = append(violations, path.String()+`.required names "`+e.str+`" which is not in properties`)
				}
			}
		}
	}
	if ap, ok := n.get("additionalProperties"); ok && ap.kind != kindBool {
		violations = append(violations, path.String()+".additionalProperties must be a boolean")
	}
	return violations
}

// spath is a schema path built lazily: a chain of segments that is turned
// into text only when a violation is reported, so deep schemas cost linear
// time.
type spath struct {
	parent *spath
	kind   uint8  // segRoot, segItems, segOneOf, segProperties, segDot
	name   string // root label, or property key
	idx    int    // oneOf branch index
}

const (
	segRoot uint8 = iota
	segItems
	segOneOf
	segProperties
	segDot // ".name", used by the DSL compiler
)

// String returns the path text, e.g. "schema.properties.a.oneOf[1].items".
func (p *spath) String() string {
	if p.parent == nil {
		return p.name
	}
	var chain []*spath
	for q := p; q != nil; q = q.parent {
		chain = append(chain, q)
	}
	var b strings.Builder
	for i := len(chain) - 1; i >= 0; i-- {
		q := chain[i]
		switch q.kind {
		case segRoot:
			b.WriteString(q.name)
		case segItems:
			b.WriteString(".items")
		case segOneOf:
			b.WriteString(".oneOf[")
			b.WriteString(strconv.Itoa(q.idx))
			b.WriteByte(']')
		case segProperties:
			b.WriteString(".properties.")
			b.WriteString(q.name)
		case segDot:
			b.WriteByte('.')
			b.WriteString(q.name)
		}
	}
	return b.String()
}
