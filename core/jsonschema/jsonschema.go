// Package jsonschema is prism's port of dsh's tool schemas: the enforced
// JSON-Schema subset (dsh assertSupportedJsonSchema), the author-facing value
// schema DSL used by defineTool (dsh parameterSchemaSpecToJsonSchema and
// valueSchemaSpecToJsonSchema), and value validation with dsh's exact
// violation messages, in dsh's walk order (dsh validateJsonSchemaValue).
//
// Schemas and DSL specs are given as JSON text and read with JavaScript's
// JSON.parse semantics: numbers are IEEE doubles ("-0" is negative zero,
// "1e400" is +Inf), a repeated object key keeps its first position and its
// last value, and object keys follow JavaScript's own-key order (array-index
// keys such as "0" or "42" first in ascending numeric order, then the other
// keys in text order). That order is the walk order of every check and the
// key order of the compiled wire schema.
//
// # Values
//
// Schema.Validate walks generic trees as produced by encoding/json Unmarshal
// into any. The JSON values are:
//
//   - nil (null), bool, string;
//   - float64, a number; it is lossless only when finite and not negative
//     zero, as in dsh;
//   - json.Number, as produced by Decoder.UseNumber, read with JavaScript's
//     rounding ("1e400" is +Inf); a json.Number that is not JSON number text
//     is not a number;
//   - map[string]any (a plain object) and []any (a dense array), non-nil.
//
// Anything else (a struct, a pointer, a typed map or slice such as []string,
// an int, a channel, or a nil map or slice, which encoding/json writes as
// null) is an exotic value, reported the way dsh reports a non-plain
// JavaScript object: it fails the object, array and scalar type checks and is
// not lossless JSON. Cyclic maps and slices are not lossless either; shared
// (acyclic) subtrees are.
//
// Every walk (parsing, checking, compiling, marshalling, validating) uses an
// explicit stack, so deeply nested input cannot exhaust the goroutine stack.
//
// # Differences from dsh
//
//   - dsh checks JavaScript values; this package reads JSON text. Text that is
//     not one JSON value is a *SyntaxError, and dsh's "is circular" violations
//     cannot arise, since parsed text is a tree.
//   - A Go map has no key order: the undeclared-property check visits keys in
//     the fixed order documented on Schema.Validate, where dsh follows the
//     value's insertion order.
//   - encoding/json replaces invalid UTF-8 and unpaired surrogate escapes
//     ("\ud800") with U+FFFD, which a JavaScript string would keep.
package jsonschema

import "strings"

// schemaType is the type keyword of a compiled node; tAny means the node has
// no type (an annotation-only node or a oneOf node).
type schemaType uint8

const (
	tAny schemaType = iota
	tObject
	tArray
	tString
	tNumber
	tInteger
	tBoolean
	tNull
)

// Schema is a compiled schema node of the enforced subset. It is immutable and
// safe for concurrent use. The zero Schema is the annotation-only schema {},
// which accepts any lossless JSON value.
type Schema struct {
	typ       schemaType
	oneOf     []*Schema // non-nil for a oneOf node
	props     []property
	propIndex map[string]int // for nodes with many properties
	required  []string
	closed    bool // additionalProperties: false
	items     *Schema
	enum      []*node
	enumText  string // JSON.stringify(enum)
	constV    *node
	constText string // JSON.stringify(const)
	wire      []byte // root only: JSON.stringify of the raw schema
}

// property is one declared property of an object node.
type property struct {
	name   string
	schema *Schema
}

// Error is dsh's JsonSchemaError: a schema or DSL spec outside the enforced
// subset. Violations lists every offending path in walk order (a DSL-level
// mistake carries exactly one violation, as in dsh).
type Error struct {
	// Violations are the individual violation messages, in walk order.
	Violations []string
}

// Error returns "unsupported JSON schema: " followed by the violations joined
// with "; ".
func (e *Error) Error() string {
	return "unsupported JSON schema: " + strings.Join(e.Violations, "; ")
}

// ErrorName returns dsh's error name, "JsonSchemaError".
func (e *Error) ErrorName() string { return "JsonSchemaError" }

// ErrorCode returns dsh's error code, "UNSUPPORTED_SCHEMA".
func (e *Error) ErrorCode() string { return "UNSUPPORTED_SCHEMA" }

// ArgsError is dsh's ToolArgsError: model-generated arguments that violate a
// tool's compiled parameter schema.
type ArgsError struct {
	// Violations are the individual violation messages, in walk order.
	Violations []string
}

// Error returns "invalid arguments: " followed by the violations joined with
// "; ".
func (e *ArgsError) Error() string {
	return "invalid arguments: " + strings.Join(e.Violations, "; ")
}

// ErrorName returns dsh's error name, "ToolArgsError".
func (e *ArgsError) ErrorName() string { return "ToolArgsError" }

// ErrorCode returns dsh's error code, "INVALID_ARGS".
func (e *ArgsError) ErrorCode() string { return "INVALID_ARGS" }

// SyntaxError reports schema or DSL input that is not one JSON text. dsh never
// sees text (its schemas are JavaScript values), so this has no dsh
// counterpart; it wraps the decoder's error.
type SyntaxError struct {
	// Err is the underlying decoding error.
	Err error
}

// Error returns "invalid JSON text: " followed by the decoder's message.
func (e *SyntaxError) Error() string { return "invalid JSON text: " + e.Err.Error() }

// Unwrap returns the underlying decoding error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Parse asserts that raw (the JSON text of a JsonSchemaNode) uses only the
// enforced subset (dsh assertSupportedJsonSchema) and compiles it. Any JSON
// root type is allowed. A subset violation returns *Error with every
// violation; text that is not one JSON value returns *SyntaxError.
func Parse(raw []byte) (*Schema, error) {
	root, err := parseJSON(raw)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	return compileChecked(root)
}

// ParseObject is Parse plus dsh assertObjectJsonSchema's object-root rule,
// used for structured outputs: a schema that is otherwise valid but whose root
// is not type "object" fails with the single violation
// `schema.type must be "object" (structured output is object-rooted)`.
func ParseObject(raw []byte) (*Schema, error) {
	root, err := parseJSON(raw)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	if v := checkSchema(root, "schema"); len(v) > 0 {
		return nil, &Error{Violations: v}
	}
	if t, ok := root.get("type"); !ok || t.kind != kindString || t.str != "object" {
		return nil, &Error{Violations: []string{`schema.type must be "object" (structured output is object-rooted)`}}
	}
	return compileChecked(root)
}

// compileChecked asserts the subset on a raw schema tree and compiles it.
func compileChecked(root *node) (*Schema, error) {
	if v := checkSchema(root, "schema"); len(v) > 0 {
		return nil, &Error{Violations: v}
	}
	s := compileTree(root)
	s.wire = appendNode(nil, root)
	return s, nil
}

// compileTree builds the Schema for a raw tree that passed checkSchema.
func compileTree(root *node) *Schema {
	type task struct {
		n   *node
		dst **Schema
	}
	var out *Schema
	tasks := []task{{root, &out}}
	for len(tasks) > 0 {
		t := tasks[len(tasks)-1]
		tasks = tasks[:len(tasks)-1]
		n := t.n
		s := &Schema{}
		*t.dst = s
		if oneOf, ok := n.get("oneOf"); ok {
			s.oneOf = make([]*Schema, len(oneOf.items))
			for i, b := range oneOf.items {
				tasks = append(tasks, task{b, &s.oneOf[i]})
			}
			continue
		}
		typ, ok := n.get("type")
		if !ok {
			continue
		}
		s.typ = typeOf(typ.str)
		switch s.typ {
		case tObject:
			if props, ok := n.get("properties"); ok {
				s.props = make([]property, len(props.keys))
				for i, k := range props.keys {
					s.props[i].name = k
					tasks = append(tasks, task{props.vals[i], &s.props[i].schema})
				}
				if len(s.props) > indexThreshold {
					s.propIndex = make(map[string]int, len(s.props))
					for i, p := range s.props {
						s.propIndex[p.name] = i
					}
				}
			}
			if req, ok := n.get("required"); ok {
				s.required = make([]string, len(req.items))
				for i, r := range req.items {
					s.required[i] = r.str
				}
			}
			if ap, ok := n.get("additionalProperties"); ok {
				s.closed = !ap.b
			}
		case tArray:
			if items, ok := n.get("items"); ok {
				tasks = append(tasks, task{items, &s.items})
			}
		default:
			if enum, ok := n.get("enum"); ok {
				s.enum = enum.items
				s.enumText = string(appendNode(nil, enum))
			}
			if c, ok := n.get("const"); ok {
				s.constV = c
				s.constText = string(appendNode(nil, c))
			}
		}
	}
	return out
}

// declared reports whether an object node declares property name.
func (s *Schema) declared(name string) bool {
	if s.propIndex != nil {
		_, ok := s.propIndex[name]
		return ok
	}
	for i := range s.props {
		if s.props[i].name == name {
			return true
		}
	}
	return false
}

// MarshalJSON returns the wire JSON Schema exactly as JSON.stringify would
// print it in dsh: for Parse, the raw schema with its keys in JavaScript
// order; for CompileParameters and CompileValue, the compiled node with dsh's
// key order (type, the annotations description/title/default/examples,
// additionalProperties, properties, required; items after the annotations;
// enum then const after the annotations; oneOf before the annotations), and
// properties in declaration order. Numbers print as JavaScript prints them and
// '<', '>' and '&' are not escaped. The zero Schema marshals as {}.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.wire == nil {
		return []byte("{}"), nil
	}
	out := make([]byte, len(s.wire))
	copy(out, s.wire)
	return out, nil
}

// String returns the wire JSON Schema text (see MarshalJSON).
func (s *Schema) String() string {
	if s.wire == nil {
		return "{}"
	}
	return string(s.wire)
}
