package jsonschema

// annotationKeys are the DSL's annotation keys, in the order dsh copies them
// onto a compiled node.
var annotationKeys = [...]string{"description", "title", "default", "examples"}

// dslError is the error for one DSL-level mistake: dsh throws a
// JsonSchemaError carrying exactly that one violation.
func dslError(msg string) error {
	return &Error{Violations: []string{msg}}
}

// CompileParameters compiles defineTool's parameter DSL (dsh
// parameterSchemaSpecToJsonSchema): dsl is a property map whose properties are
// value schemas that may also carry `required: true`. The result is the
// object-rooted wire schema {"type":"object","properties":{...},"required":[...]}:
// the root stays open (no additionalProperties), the per-property required
// flags are removed, and required is omitted when no property is required.
//
// The first DSL-level mistake (paths rooted at "parameters") fails with an
// *Error carrying that one violation; the compiled schema must then pass the
// enforced subset (paths rooted at "schema"), else *Error lists every
// violation. Text that is not one JSON value returns *SyntaxError.
func CompileParameters(dsl []byte) (*Schema, error) {
	spec, err := parseJSON(dsl)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	root := &node{kind: kindObject}
	root.keys = append(root.keys, "type")
	root.vals = append(root.vals, &node{kind: kindString, str: "object"})
	if err := compileDSL(dslTask{op: dslPropertyMap, in: spec, path: &spath{name: "parameters"}, obj: root}); err != nil {
		return nil, err
	}
	return compileChecked(root)
}

// CompileValue compiles one author-facing value schema (dsh
// valueSchemaSpecToJsonSchema), as used for a tool's output schema. The
// author-only {"type":"json"} compiles to an annotation-only node that accepts
// any lossless JSON value. Object nodes must declare additionalProperties
// explicitly; their properties form a property map with `required: true`
// flags. Errors are as for CompileParameters, with DSL paths rooted at
// "schema".
func CompileValue(dsl []byte) (*Schema, error) {
	spec, err := parseJSON(dsl)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	var root *node
	if err := compileDSL(dslTask{op: dslValue, in: spec, path: &spath{name: "schema"}, dst: &root}); err != nil {
		return nil, err
	}
	return compileChecked(root)
}

const (
	dslValue = iota
	dslPropertyMap
	dslProperty
	dslPropertyMapTail
)

// dslTask is one deferred step of the stack-safe DSL compiler. The compiler
// runs depth first in declaration order, so the first mistake it meets is the
// one dsh reports.
type dslTask struct {
	op            uint8
	in            *node
	path          *spath
	allowRequired bool   // dslValue: the node is a property and may carry required
	dst           **node // dslValue: where the compiled node goes
	obj           *node  // dslPropertyMap, dslPropertyMapTail: the object node being built
	props         *node  // dslProperty, dslPropertyMapTail: the compiled properties object
	key           string // dslProperty
	required      *[]string
}

// compileDSL runs the DSL compiler from one initial task.
func compileDSL(initial dslTask) error {
	tasks := []dslTask{initial}
	for len(tasks) > 0 {
		t := tasks[len(tasks)-1]
		tasks = tasks[:len(tasks)-1]
		switch t.op {
		case dslPropertyMapTail:
			finishObject(t.props)
			if len(*t.required) > 0 {
				req := &node{kind: kindArray, items: make([]*node, len(*t.required))}
				for i, k := range *t.required {
					req.items[i] = &node{kind: kindString, str: k}
				}
				addMember(t.obj, "required", req)
			}
			continue
		case dslProperty:
			if t.in.kind != kindObject {
				return dslError(t.path.String() + " must be a value schema object")
			}
			if r, ok := t.in.get("required"); ok {
				if r.kind != kindBool || !r.b {
					return dslError(t.path.String() + ".required must be true when present")
				}
				*t.required = append(*t.required, t.key)
			}
			tasks = append(tasks, dslTask{op: dslValue, in: t.in, path: t.path, allowRequired: true, dst: t.dst})
			continue
		case dslPropertyMap:
			if t.in.kind != kindObject {
				return dslError(t.path.String() + " must be an object of value schemas")
			}
			props := &node{kind: kindObject, keys: make([]string, len(t.in.keys)), vals: make([]*node, len(t.in.keys))}
			copy(props.keys, t.in.keys)
			addMember(t.obj, "properties", props)
			required := new([]string)
			tasks = append(tasks, dslTask{op: dslPropertyMapTail, obj: t.obj, props: props, required: required})
			for i := len(t.in.keys) - 1; i >= 0; i-- {
				tasks = append(tasks, dslTask{
					op:       dslProperty,
					in:       t.in.vals[i],
					path:     &spath{parent: t.path, kind: segDot, name: t.in.keys[i]},
					key:      t.in.keys[i],
					dst:      &props.vals[i],
					required: required,
				})
			}
			continue
		}

		in, path := t.in, t.path
		if in.kind != kindObject {
			return dslError(path.String() + " must be a value schema object")
		}
		out := &node{kind: kindObject}
		*t.dst = out

		if oneOf, ok := in.get("oneOf"); ok {
			if err := authorKeys(in, path, t.allowRequired, "oneOf", "type"); err != nil {
				return err
			}
			if in.has("type") {
				return dslError(path.String() + " cannot declare both type and oneOf")
			}
			if oneOf.kind != kindArray {
				return dslError(path.String() + ".oneOf must be an array of at least two value schemas")
			}
			branches := &node{kind: kindArray, items: make([]*node, len(oneOf.items))}
			addMember(out, "oneOf", branches)
			copyAnnotations(in, out)
			for i := len(oneOf.items) - 1; i >= 0; i-- {
				tasks = append(tasks, dslTask{op: dslValue, in: oneOf.items[i], path: &spath{parent: path, kind: segOneOf, idx: i}, dst: &branches.items[i]})
			}
			finishObject(out)
			continue
		}

		name := ""
		if typ, ok := in.get("type"); ok && typ.kind == kindString {
			name = typ.str
		}
		switch name {
		case "json":
			if err := authorKeys(in, path, t.allowRequired, "type"); err != nil {
				return err
			}
			copyAnnotations(in, out)
		case "object":
			if err := authorKeys(in, path, t.allowRequired, "type", "properties", "additionalProperties"); err != nil {
				return err
			}
			ap, ok := in.get("additionalProperties")
			if !ok || ap.kind != kindBool {
				return dslError(path.String() + ".additionalProperties must be explicitly true or false")
			}
			addMember(out, "type", &node{kind: kindString, str: "object"})
			copyAnnotations(in, out)
			addMember(out, "additionalProperties", ap)
			if props, ok := in.get("properties"); ok {
				tasks = append(tasks, dslTask{op: dslPropertyMap, in: props, path: &spath{parent: path, kind: segDot, name: "properties"}, obj: out})
			}
		case "array":
			if err := authorKeys(in, path, t.allowRequired, "type", "items"); err != nil {
				return err
			}
			addMember(out, "type", &node{kind: kindString, str: "array"})
			copyAnnotations(in, out)
			if items, ok := in.get("items"); ok {
				// The items slot is filled when the task runs; reserve its position now.
				addMember(out, "items", nil)
				tasks = append(tasks, dslTask{op: dslValue, in: items, path: &spath{parent: path, kind: segItems}, dst: &out.vals[len(out.vals)-1]})
			}
		case "string", "number", "integer", "boolean", "null":
			if err := authorKeys(in, path, t.allowRequired, "type", "enum", "const"); err != nil {
				return err
			}
			addMember(out, "type", &node{kind: kindString, str: name})
			copyAnnotations(in, out)
			if enum, ok := in.get("enum"); ok {
				if enum.kind != kindArray {
					return dslError(path.String() + ".enum must be a non-empty array of scalar values")
				}
				addMember(out, "enum", enum)
			}
			if c, ok := in.get("const"); ok {
				addMember(out, "const", c)
			}
		default:
			return dslError(path.String() + ".type must be string/number/integer/boolean/null/array/object/json, or use oneOf")
		}
		finishObject(out)
	}
	return nil
}

// authorKeys rejects keys outside one DSL node's vocabulary: the annotations,
// required when the node is a property, and the variant's own keys.
func authorKeys(in *node, path *spath, allowRequired bool, own ...string) error {
	for _, k := range in.keys {
		if isAnnotationKeyword(k) || (allowRequired && k == "required") {
			continue
		}
		ok := false
		for _, o := range own {
			if k == o {
				ok = true
				break
			}
		}
		if !ok {
			return dslError(path.String() + "." + k + " is not supported by the value schema DSL")
		}
	}
	return nil
}

// copyAnnotations copies the source's annotations onto a compiled node in
// dsh's fixed order; their types are checked later by the subset assertion.
func copyAnnotations(src, dst *node) {
	for _, k := range annotationKeys {
		if v, ok := src.get(k); ok {
			addMember(dst, k, v)
		}
	}
}

// addMember appends a fixed (non-index) key to an object node under
// construction.
func addMember(obj *node, key string, v *node) {
	obj.keys = append(obj.keys, key)
	obj.vals = append(obj.vals, v)
}

// finishObject builds the lookup index of a constructed object node.
func finishObject(obj *node) {
	if len(obj.keys) > indexThreshold {
		obj.index = make(map[string]int, len(obj.keys))
		for i, k := range obj.keys {
			obj.index[k] = i
		}
	}
}
