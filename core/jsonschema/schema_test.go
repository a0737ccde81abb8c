package jsonschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const kw = " is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
const typeList = "object/array/string/number/integer/boolean/null"

// violationsOf returns the violations of a rejected schema, failing the test
// when the error is not an *Error.
func violationsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not *Error", err, err)
	}
	return se.Violations
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"null root", `null`, []string{"schema must be a schema object"}},
		{"array root", `[]`, []string{"schema must be a schema object"}},
		{"string root", `"no"`, []string{"schema must be a schema object"}},
		{"number root", `1`, []string{"schema must be a schema object"}},
		{"unknown type", `{"type":"tuple"}`, []string{"schema.type must be one of " + typeList}},
		{"non-string type", `{"type":5}`, []string{"schema.type must be one of " + typeList}},
		{"null type", `{"type":null}`, []string{"schema.type must be one of " + typeList}},
		{"type array", `{"type":["string","null"]}`, []string{"schema.type must be a single type string (type arrays are not supported)"}},
		{"empty type array", `{"type":[]}`, []string{"schema.type must be a single type string (type arrays are not supported)"}},

		{"oneOf empty", `{"oneOf":[]}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{"oneOf single", `{"oneOf":[{}]}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{"oneOf not array", `{"oneOf":"x"}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{"oneOf object", `{"oneOf":{"a":{},"b":{}}}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{"type and oneOf", `{"type":"string","oneOf":[{},{}]}`, []string{"schema cannot declare both type and oneOf"}},
		{"type and oneOf stops the node", `{"type":"string","oneOf":5,"items":{},"enum":[]}`, []string{"schema cannot declare both type and oneOf"}},
		{"oneOf with items", `{"oneOf":[{"type":"string"},{"type":"number"}],"items":{}}`, []string{"schema.items is not supported beside oneOf"}},
		{"oneOf branch then every sibling", `{"const":null,"enum":[],"items":{},"additionalProperties":true,"required":[],"properties":{},"oneOf":[{"type":"string"},{"type":"weird"}]}`, []string{
			"schema.oneOf[1].type must be one of " + typeList,
			"schema.properties is not supported beside oneOf",
			"schema.required is not supported beside oneOf",
			"schema.additionalProperties is not supported beside oneOf",
			"schema.items is not supported beside oneOf",
			"schema.enum is not supported beside oneOf",
			"schema.const is not supported beside oneOf",
		}},
		{"too few branches still reports siblings", `{"oneOf":[{}],"items":{}}`, []string{
			"schema.oneOf must be an array of at least two schemas",
			"schema.items is not supported beside oneOf",
		}},
		{"oneOf branch not a schema", `{"oneOf":[{"type":"string"},3]}`, []string{"schema.oneOf[1] must be a schema object"}},

		{"anyOf", `{"type":"object","anyOf":[]}`, []string{"schema.anyOf" + kw}},
		{"allOf", `{"type":"object","allOf":[]}`, []string{"schema.allOf" + kw}},
		{"not", `{"type":"object","not":{}}`, []string{"schema.not" + kw}},
		{"pattern", `{"type":"string","pattern":"x"}`, []string{"schema.pattern" + kw}},
		{"minimum", `{"type":"number","minimum":1}`, []string{"schema.minimum" + kw}},
		{"maxLength", `{"type":"string","maxLength":1}`, []string{"schema.maxLength" + kw}},
		{"$ref", `{"$ref":"#"}`, []string{"schema.$ref" + kw}},
		{"__proto__ key", `{"__proto__":{}}`, []string{"schema.__proto__" + kw}},

		{"items on object", `{"type":"object","items":{}}`, []string{`schema.items is not supported on type "object"`}},
		{"properties on array", `{"type":"array","properties":{}}`, []string{`schema.properties is not supported on type "array"`}},
		{"enum on object", `{"type":"object","enum":["x"]}`, []string{`schema.enum is not supported on type "object"`}},
		{"const on array", `{"type":"array","const":null}`, []string{`schema.const is not supported on type "array"`}},
		{"object keywords on string", `{"additionalProperties":false,"required":[],"properties":{"a":{"type":"x"}},"type":"string"}`, []string{
			`schema.properties is not supported on type "string"`,
			`schema.required is not supported on type "string"`,
			`schema.additionalProperties is not supported on type "string"`,
		}},
		{"items on null is not walked", `{"type":"null","items":{"type":"x"}}`, []string{`schema.items is not supported on type "null"`}},
		{"constraints without type", `{"properties":{},"required":[],"additionalProperties":true,"items":{},"enum":[],"const":null}`, []string{
			"schema.properties requires type or oneOf",
			"schema.required requires type or oneOf",
			"schema.additionalProperties requires type or oneOf",
			"schema.items requires type or oneOf",
			"schema.enum requires type or oneOf",
			"schema.const requires type or oneOf",
		}},
		{"every independent violation", `{"type":"object","pattern":"x","properties":{"a":{"type":"weird"},"b":{"type":"string","minimum":1}}}`, []string{
			"schema.pattern" + kw,
			"schema.properties.a.type must be one of " + typeList,
			"schema.properties.b.minimum" + kw,
		}},

		{"properties array", `{"type":"object","properties":[]}`, []string{"schema.properties must be an object of schemas"}},
		{"properties null", `{"type":"object","properties":null}`, []string{"schema.properties must be an object of schemas"}},
		{"property not a schema", `{"type":"object","properties":{"a":"x"}}`, []string{"schema.properties.a must be a schema object"}},
		{"required string", `{"type":"object","required":"a"}`, []string{"schema.required must be an array of strings"}},
		{"required numbers", `{"type":"object","required":[1]}`, []string{"schema.required must be an array of strings"}},
		{"required undeclared", `{"type":"object","properties":{},"required":["missing"]}`, []string{`schema.required names "missing" which is not in properties`}},
		{"required without properties", `{"type":"object","required":["a","b"]}`, []string{
			`schema.required names "a" which is not in properties`,
			`schema.required names "b" which is not in properties`,
		}},
		{"required own keys only", `{"type":"object","properties":{},"required":["toString"]}`, []string{`schema.required names "toString" which is not in properties`}},
		{"additionalProperties string", `{"type":"object","additionalProperties":"yes"}`, []string{"schema.additionalProperties must be a boolean"}},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{}}`, []string{"schema.additionalProperties must be a boolean"}},
		{"bad properties and required", `{"type":"object","properties":null,"required":["missing"]}`, []string{
			"schema.properties must be an object of schemas",
			`schema.required names "missing" which is not in properties`,
		}},
		{"object tail after property schemas", `{"type":"object","required":["b"],"additionalProperties":1,"properties":{"a":{"type":"x"}}}`, []string{
			"schema.properties.a.type must be one of " + typeList,
			`schema.required names "b" which is not in properties`,
			"schema.additionalProperties must be a boolean",
		}},

		{"string enum empty", `{"type":"string","enum":[]}`, []string{"schema.enum must be a non-empty array of string values"}},
		{"number enum string", `{"type":"number","enum":["1"]}`, []string{"schema.enum must be a non-empty array of number values"}},
		{"integer enum fraction", `{"type":"integer","enum":[1.5]}`, []string{"schema.enum must be a non-empty array of integer values"}},
		{"number enum infinite", `{"type":"number","enum":[1e400]}`, []string{"schema.enum must be a non-empty array of number values"}},
		{"number enum negative zero", `{"type":"number","enum":[-0]}`, []string{"schema.enum must be a non-empty array of number values"}},
		{"string enum null", `{"type":"string","enum":null}`, []string{"schema.enum must be a non-empty array of string values"}},
		{"boolean enum object", `{"type":"boolean","enum":{}}`, []string{"schema.enum must be a non-empty array of boolean values"}},
		{"null enum false", `{"type":"null","enum":[false]}`, []string{"schema.enum must be a non-empty array of null values"}},
		{"number const negative zero", `{"type":"number","const":-0}`, []string{"schema.const must be a number value"}},
		{"integer const fraction", `{"type":"integer","const":1.5}`, []string{"schema.const must be a integer value"}},
		{"boolean const number", `{"type":"boolean","const":1}`, []string{"schema.const must be a boolean value"}},
		{"null const zero", `{"type":"null","const":0}`, []string{"schema.const must be a null value"}},
		{"string const array", `{"type":"string","const":["a"]}`, []string{"schema.const must be a string value"}},
		{"const outside enum", `{"type":"string","enum":["a"],"const":"b"}`, []string{"schema.const must be one of schema.enum when both are declared"}},
		{"number const outside enum", `{"type":"number","enum":[1,2],"const":3}`, []string{"schema.const must be one of schema.enum when both are declared"}},
		{"bad enum skips membership", `{"type":"string","enum":[1],"const":"a"}`, []string{"schema.enum must be a non-empty array of string values"}},
		{"bad enum and bad const", `{"type":"string","enum":[],"const":1}`, []string{
			"schema.enum must be a non-empty array of string values",
			"schema.const must be a string value",
		}},

		{"description number", `{"description":1}`, []string{"schema.description must be a string"}},
		{"title number", `{"title":1}`, []string{"schema.title must be a string"}},
		{"title null", `{"title":null}`, []string{"schema.title must be a string"}},
		{"default negative zero", `{"default":-0}`, []string{"schema.default annotation must be lossless JSON data"}},
		{"default infinite", `{"default":1e400}`, []string{"schema.default annotation must be lossless JSON data"}},
		{"examples nested infinite", `{"examples":[{"a":[-1e999]}]}`, []string{"schema.examples annotation must be lossless JSON data"}},
		{"description lossless but not a string", `{"description":-0}`, []string{
			"schema.description annotation must be lossless JSON data",
			"schema.description must be a string",
		}},
		{"key loop then description and title", `{"title":2,"x":1,"default":-0,"description":1}`, []string{
			"schema.x" + kw,
			"schema.default annotation must be lossless JSON data",
			"schema.description must be a string",
			"schema.title must be a string",
		}},

		{"JavaScript key order", `{"type":"object","properties":{"b":{"type":"x"},"10":{"type":"y"},"2":{"type":"z"},"a":{"type":"w"}}}`, []string{
			"schema.properties.2.type must be one of " + typeList,
			"schema.properties.10.type must be one of " + typeList,
			"schema.properties.b.type must be one of " + typeList,
			"schema.properties.a.type must be one of " + typeList,
		}},
		{"non-canonical index keys keep text order", `{"type":"object","properties":{"01":{"type":"x"},"4294967295":{"type":"y"},"4294967294":{"type":"z"}}}`, []string{
			"schema.properties.4294967294.type must be one of " + typeList,
			"schema.properties.01.type must be one of " + typeList,
			"schema.properties.4294967295.type must be one of " + typeList,
		}},
		{"duplicate key keeps first position, last value", `{"a":1,"type":"x","a":2,"type":"string","b":3}`, []string{
			"schema.a" + kw,
			"schema.b" + kw,
		}},
		{"nested paths", `{"type":"array","items":{"oneOf":[{"type":"object","properties":{"x":{"enum":[1]}}},{}]}}`, []string{
			"schema.items.oneOf[0].properties.x.enum requires type or oneOf",
		}},
		{"dotted property names are not escaped", `{"type":"object","properties":{"a.b":{"type":1}}}`, []string{
			"schema.properties.a.b.type must be one of " + typeList,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Parse accepted %s as %s", tt.schema, s)
			}
			if diff := cmp.Diff(tt.want, violationsOf(t, err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name, schema, wire string
	}{
		{"string", `{"type":"string"}`, `{"type":"string"}`},
		{"number", `{"type":"number"}`, `{"type":"number"}`},
		{"integer", `{"type":"integer"}`, `{"type":"integer"}`},
		{"boolean", `{"type":"boolean"}`, `{"type":"boolean"}`},
		{"null", `{"type":"null"}`, `{"type":"null"}`},
		{"array", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"string"}}`},
		{"object", ` { "type" : "object", "properties" : { "nested" : { "type":"object","properties":{},"additionalProperties":false }, "free":{} }, "required":["nested"], "additionalProperties":true } `,
			`{"type":"object","properties":{"nested":{"type":"object","properties":{},"additionalProperties":false},"free":{}},"required":["nested"],"additionalProperties":true}`},
		{"oneOf", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `{"oneOf":[{"type":"string"},{"type":"number"}]}`},
		{"annotation only", `{"description":"any JSON","title":"JSON","default":null,"examples":[1,"x"]}`, `{"description":"any JSON","title":"JSON","default":null,"examples":[1,"x"]}`},
		{"empty", `{}`, `{}`},
		{"scalar enum and const", `{"type":"string","enum":["a"],"const":"a"}`, `{"type":"string","enum":["a"],"const":"a"}`},
		{"number literals", `{"type":"number","enum":[1.0,1.5,1e21,1E-7,-5,100,0.000001],"const":1e21}`, `{"type":"number","enum":[1,1.5,1e+21,1e-7,-5,100,0.000001],"const":1e+21}`},
		{"integer enum", `{"type":"integer","enum":[1,2.0],"const":2}`, `{"type":"integer","enum":[1,2],"const":2}`},
		{"boolean enum", `{"type":"boolean","enum":[true],"const":true}`, `{"type":"boolean","enum":[true],"const":true}`},
		{"null enum", `{"type":"null","enum":[null],"const":null}`, `{"type":"null","enum":[null],"const":null}`},
		{"JS escaping", `{"title":"<a&b>\u2028\u0001\"\\\/","type":"string"}`, "{\"title\":\"<a&b>\u2028\\u0001\\\"\\\\/\",\"type\":\"string\"}"},
		{"JS key order", `{"type":"object","properties":{"b":{},"10":{},"2":{}}}`, `{"type":"object","properties":{"2":{},"10":{},"b":{}}}`},
		{"duplicate keys", `{"title":"a","type":"number","title":"b"}`, `{"title":"b","type":"number"}`},
		{"sibling reuse is fine", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`},
		// Divergence: JSON.parse keeps the lone surrogate and JSON.stringify writes "\ud800".
		{"lone surrogate becomes U+FFFD", `{"title":"\ud800"}`, "{\"title\":\"\ufffd\"}"},
		{"default lossless nested", `{"default":{"x":[1,{"y":-1.5}]}}`, `{"default":{"x":[1,{"y":-1.5}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.schema))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := s.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wire, string(got)); diff != "" {
				t.Errorf("wire (-want +got):\n%s", diff)
			}
			again, err := Parse(got)
			if err != nil {
				t.Fatalf("re-Parse: %v", err)
			}
			if again.String() != string(got) {
				t.Errorf("re-marshal %s, want %s", again, got)
			}
		})
	}
}

func TestParseSyntaxError(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"type":"string"} {}`, `{"type":"string"}x`, `[1,]`, `{'a':1}`, `NaN`, `01`} {
		_, err := Parse([]byte(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want *SyntaxError", in, err)
			continue
		}
		if !strings.HasPrefix(se.Error(), "invalid JSON text: ") || se.Unwrap() == nil {
			t.Errorf("Parse(%q) error text %q", in, se.Error())
		}
	}
	for _, f := range []func([]byte) (*Schema, error){CompileParameters, CompileValue, ParseObject} {
		var se *SyntaxError
		if _, err := f([]byte(`{`)); !errors.As(err, &se) {
			t.Errorf("got %v, want *SyntaxError", err)
		}
	}
}

func TestErrorText(t *testing.T) {
	_, err := Parse([]byte(`{"type":"object","pattern":"x","required":"a"}`))
	want := "unsupported JSON schema: schema.pattern" + kw + "; schema.required must be an array of strings"
	if err == nil || err.Error() != want {
		t.Fatalf("Error() = %v, want %q", err, want)
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("%T is not *Error", err)
	}
	if se.ErrorName() != "JsonSchemaError" || se.ErrorCode() != "UNSUPPORTED_SCHEMA" {
		t.Errorf("name/code = %s/%s", se.ErrorName(), se.ErrorCode())
	}
	one := &Error{Violations: []string{"schema must be a schema object"}}
	if one.Error() != "unsupported JSON schema: schema must be a schema object" {
		t.Errorf("single: %q", one.Error())
	}
	args := &ArgsError{Violations: []string{`missing required property "title"`, `"n" must be an integer`}}
	if got := args.Error(); got != `invalid arguments: missing required property "title"; "n" must be an integer` {
		t.Errorf("ArgsError: %q", got)
	}
	if args.ErrorName() != "ToolArgsError" || args.ErrorCode() != "INVALID_ARGS" {
		t.Errorf("ArgsError name/code = %s/%s", args.ErrorName(), args.ErrorCode())
	}
}

func TestParseObject(t *testing.T) {
	const objectRoot = `schema.type must be "object" (structured output is object-rooted)`
	for _, in := range []string{`{}`, `{"type":"string"}`, `{"type":"array"}`, `{"oneOf":[{"type":"string"},{"type":"null"}]}`} {
		_, err := ParseObject([]byte(in))
		if diff := cmp.Diff([]string{objectRoot}, violationsOf(t, err)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", in, diff)
		}
	}
	// Subset violations win over the object-root rule.
	_, err := ParseObject([]byte(`{"type":"strin"}`))
	if diff := cmp.Diff([]string{"schema.type must be one of " + typeList}, violationsOf(t, err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s, err := ParseObject([]byte(`{"type":"object"}`))
	if err != nil || s.String() != `{"type":"object"}` {
		t.Errorf("ParseObject object: %v %v", s, err)
	}
}

func TestCompileParameters(t *testing.T) {
	tests := []struct {
		name, dsl, wire string
	}{
		{"note", `{"title":{"type":"string","required":true,"description":"Note title"}}`,
			`{"type":"object","properties":{"title":{"type":"string","description":"Note title"}},"required":["title"]}`},
		{"optional only", `{"path":{"type":"string"},"offset":{"type":"integer","description":"1-based"}}`,
			`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","description":"1-based"}}}`},
		{"empty", `{}`, `{"type":"object","properties":{}}`},
		{"nested objects with their own required", `{"closed":{"type":"object","additionalProperties":false,"required":true,"properties":{"id":{"type":"integer","required":true},"label":{"type":"string"}}},"open":{"type":"object","additionalProperties":true}}`,
			`{"type":"object","properties":{"closed":{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"label":{"type":"string"}},"required":["id"]},"open":{"type":"object","additionalProperties":true}},"required":["closed"]}`},
		{"nested object without required", `{"o":{"properties":{"a":{"type":"string"}},"type":"object","additionalProperties":true}}`,
			`{"type":"object","properties":{"o":{"type":"object","additionalProperties":true,"properties":{"a":{"type":"string"}}}}}`},
		{"json type", `{"data":{"type":"json","description":"any"}}`, `{"type":"object","properties":{"data":{"description":"any"}}}`},
		{"oneOf property", `{"v":{"required":true,"oneOf":[{"type":"string"},{"type":"null"}],"title":"V"}}`,
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"null"}],"title":"V"}},"required":["v"]}`},
		{"index keys first", `{"b":{"type":"string"},"1":{"type":"string","required":true},"0":{"type":"string","required":true}}`,
			`{"type":"object","properties":{"0":{"type":"string"},"1":{"type":"string"},"b":{"type":"string"}},"required":["0","1"]}`},
		{"__proto__ is data", `{"__proto__":{"type":"string","required":true}}`,
			`{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}`},
		{"array of enums", `{"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"required":true}}`,
			`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},"required":["tags"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileParameters([]byte(tt.dsl))
			if err != nil {
				t.Fatalf("CompileParameters: %v", err)
			}
			if diff := cmp.Diff(tt.wire, s.String()); diff != "" {
				t.Errorf("wire (-want +got):\n%s", diff)
			}
			// The wire schema is a valid raw schema that re-marshals identically.
			raw, err := Parse([]byte(s.String()))
			if err != nil || raw.String() != tt.wire {
				t.Errorf("re-Parse: %v, %v", raw, err)
			}
		})
	}
}

func TestCompileParametersRejects(t *testing.T) {
	tests := []struct {
		name, dsl string
		want      []string
	}{
		{"null", `null`, []string{"parameters must be an object of value schemas"}},
		{"array", `[]`, []string{"parameters must be an object of value schemas"}},
		{"property not an object", `{"bad":42}`, []string{"parameters.bad must be a value schema object"}},
		{"required false", `{"value":{"type":"string","required":false}}`, []string{"parameters.value.required must be true when present"}},
		{"required string", `{"value":{"type":"string","required":"true"}}`, []string{"parameters.value.required must be true when present"}},
		{"required checked before the node", `{"x":{"type":"bad","required":1}}`, []string{"parameters.x.required must be true when present"}},
		{"unknown key", `{"a":{"type":"string","foo":1}}`, []string{"parameters.a.foo is not supported by the value schema DSL"}},
		{"first mistake in declaration order", `{"a":{"type":"string"},"b":{"type":"string","x":1},"c":5}`, []string{"parameters.b.x is not supported by the value schema DSL"}},
		{"depth first", `{"a":{"type":"array","items":{"type":"bad"}},"b":5}`, []string{"parameters.a.items.type must be string/number/integer/boolean/null/array/object/json, or use oneOf"}},
		{"nested object needs openness", `{"o":{"type":"object","properties":{}}}`, []string{"parameters.o.additionalProperties must be explicitly true or false"}},
		{"nested property required false", `{"o":{"type":"object","additionalProperties":true,"properties":{"x":{"type":"string","required":false}}}}`, []string{"parameters.o.properties.x.required must be true when present"}},
		{"nested properties not a map", `{"o":{"type":"object","additionalProperties":true,"properties":[]}}`, []string{"parameters.o.properties must be an object of value schemas"}},
		{"required inside items", `{"a":{"type":"array","items":{"type":"string","required":true}}}`, []string{"parameters.a.items.required is not supported by the value schema DSL"}},
		{"required inside oneOf branch", `{"a":{"oneOf":[{"type":"string","required":true},{"type":"null"}]}}`, []string{"parameters.a.oneOf[0].required is not supported by the value schema DSL"}},
		// Mistakes the DSL passes through are reported by the subset assertion, rooted at "schema".
		{"enum typing", `{"a":{"type":"string","enum":[1]}}`, []string{"schema.properties.a.enum must be a non-empty array of string values"}},
		{"every subset violation", `{"a":{"type":"string","enum":[1],"const":2,"required":true},"b":{"type":"json","description":3},"c":{"oneOf":[{"type":"null"}]}}`, []string{
			"schema.properties.a.enum must be a non-empty array of string values",
			"schema.properties.a.const must be a string value",
			"schema.properties.b.description must be a string",
			"schema.properties.c.oneOf must be an array of at least two schemas",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileParameters([]byte(tt.dsl))
			if err == nil {
				t.Fatalf("accepted as %s", s)
			}
			if diff := cmp.Diff(tt.want, violationsOf(t, err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileValue(t *testing.T) {
	tests := []struct {
		name, dsl, wire string
	}{
		{"note output", `{"type":"object","additionalProperties":false,"properties":{"title":{"type":"string","required":true},"lines":{"type":"array","required":true,"items":{"type":"string"}}}}`,
			`{"type":"object","additionalProperties":false,"properties":{"title":{"type":"string"},"lines":{"type":"array","items":{"type":"string"}}},"required":["title","lines"]}`},
		{"string literals", `{"type":"string","enum":["a","b"],"const":"a"}`, `{"type":"string","enum":["a","b"],"const":"a"}`},
		{"number", `{"type":"number"}`, `{"type":"number"}`},
		{"integer", `{"type":"integer"}`, `{"type":"integer"}`},
		{"boolean", `{"type":"boolean"}`, `{"type":"boolean"}`},
		{"null", `{"type":"null"}`, `{"type":"null"}`},
		{"array of json", `{"type":"array","items":{"type":"json"}}`, `{"type":"array","items":{}}`},
		{"array without items", `{"type":"array"}`, `{"type":"array"}`},
		{"empty closed object", `{"type":"object","additionalProperties":false,"properties":{}}`, `{"type":"object","additionalProperties":false,"properties":{}}`},
		{"object without properties", `{"type":"object","additionalProperties":true}`, `{"type":"object","additionalProperties":true}`},
		{"json annotations", `{"type":"json","description":"anything","title":"Any JSON","default":null,"examples":[{"nested":true}]}`,
			`{"description":"anything","title":"Any JSON","default":null,"examples":[{"nested":true}]}`},
		{"bare json", `{"type":"json"}`, `{}`},
		{"oneOf", `{"oneOf":[{"type":"string"},{"type":"null"}]}`, `{"oneOf":[{"type":"string"},{"type":"null"}]}`},
		{"oneOf before annotations", `{"description":"d","oneOf":[{"type":"string"},{"type":"json"}]}`, `{"oneOf":[{"type":"string"},{}],"description":"d"}`},
		{"annotation order is fixed", `{"examples":["x"],"const":"x","default":"d","enum":["x","d"],"title":"T","type":"string","description":"D"}`,
			`{"type":"string","description":"D","title":"T","default":"d","examples":["x"],"enum":["x","d"],"const":"x"}`},
		{"items after annotations", `{"items":{"type":"string"},"title":"t","type":"array"}`, `{"type":"array","title":"t","items":{"type":"string"}}`},
		{"object key order", `{"properties":{"a":{"type":"string","required":true}},"description":"o","additionalProperties":true,"type":"object"}`,
			`{"type":"object","description":"o","additionalProperties":true,"properties":{"a":{"type":"string"}},"required":["a"]}`},
		{"annotations are lossless copies", `{"type":"integer","default":1.0,"examples":[1e21,"<&>"]}`, `{"type":"integer","default":1,"examples":[1e+21,"<&>"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileValue([]byte(tt.dsl))
			if err != nil {
				t.Fatalf("CompileValue: %v", err)
			}
			got, _ := s.MarshalJSON()
			if diff := cmp.Diff(tt.wire, string(got)); diff != "" {
				t.Errorf("wire (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileValueRejects(t *testing.T) {
	const typeMsg = ".type must be string/number/integer/boolean/null/array/object/json, or use oneOf"
	tests := []struct {
		name, dsl string
		want      []string
	}{
		{"null", `null`, []string{"schema must be a value schema object"}},
		{"string", `"string"`, []string{"schema must be a value schema object"}},
		{"no type", `{}`, []string{"schema" + typeMsg}},
		{"unknown type", `{"type":"tuple"}`, []string{"schema" + typeMsg}},
		{"type array", `{"type":["string"]}`, []string{"schema" + typeMsg}},
		{"object without openness", `{"type":"object"}`, []string{"schema.additionalProperties must be explicitly true or false"}},
		{"object openness not boolean", `{"type":"object","additionalProperties":"no"}`, []string{"schema.additionalProperties must be explicitly true or false"}},
		{"unknown key before openness", `{"type":"object","extra":1}`, []string{"schema.extra is not supported by the value schema DSL"}},
		{"string extra", `{"type":"string","extra":true}`, []string{"schema.extra is not supported by the value schema DSL"}},
		{"items on string", `{"type":"string","items":{}}`, []string{"schema.items is not supported by the value schema DSL"}},
		{"json with enum", `{"type":"json","enum":[1]}`, []string{"schema.enum is not supported by the value schema DSL"}},
		{"required at the root", `{"type":"string","required":true}`, []string{"schema.required is not supported by the value schema DSL"}},
		{"required on a oneOf root", `{"oneOf":[{"type":"string"},{"type":"null"}],"required":true}`, []string{"schema.required is not supported by the value schema DSL"}},
		{"oneOf unknown key first", `{"oneOf":[{"type":"string"},{"type":"null"}],"items":{},"type":"string"}`, []string{"schema.items is not supported by the value schema DSL"}},
		{"type beside oneOf", `{"type":"string","oneOf":[{"type":"string"},{"type":"null"}]}`, []string{"schema cannot declare both type and oneOf"}},
		{"oneOf not an array", `{"oneOf":"not-an-array"}`, []string{"schema.oneOf must be an array of at least two value schemas"}},
		{"oneOf branch type", `{"oneOf":[{"type":"string"},{"type":"x"}]}`, []string{"schema.oneOf[1]" + typeMsg}},
		{"oneOf branch not an object", `{"oneOf":[{"type":"string"},7]}`, []string{"schema.oneOf[1] must be a value schema object"}},
		{"enum not an array", `{"type":"string","enum":"a"}`, []string{"schema.enum must be a non-empty array of scalar values"}},
		{"items not an object", `{"type":"array","items":42}`, []string{"schema.items must be a value schema object"}},
		{"items required", `{"type":"array","items":{"type":"string","required":true}}`, []string{"schema.items.required is not supported by the value schema DSL"}},
		{"properties not a map", `{"type":"object","additionalProperties":true,"properties":[]}`, []string{"schema.properties must be an object of value schemas"}},
		{"property required false", `{"type":"object","additionalProperties":true,"properties":{"x":{"type":"string","required":false}}}`, []string{"schema.properties.x.required must be true when present"}},
		{"property not an object", `{"type":"object","additionalProperties":true,"properties":{"x":null}}`, []string{"schema.properties.x must be a value schema object"}},
		// Passed through the DSL, rejected by the subset assertion.
		{"oneOf with one branch", `{"oneOf":[{"type":"string"}]}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{"oneOf empty", `{"oneOf":[]}`, []string{"schema.oneOf must be an array of at least two schemas"}},
		{"enum typing", `{"type":"number","enum":["1"]}`, []string{"schema.enum must be a non-empty array of number values"}},
		{"empty enum", `{"type":"string","enum":[]}`, []string{"schema.enum must be a non-empty array of string values"}},
		{"const outside enum", `{"type":"string","enum":["a"],"const":"b"}`, []string{"schema.const must be one of schema.enum when both are declared"}},
		{"const typing", `{"type":"integer","const":1.5}`, []string{"schema.const must be a integer value"}},
		{"annotation lossless", `{"type":"json","default":-0}`, []string{"schema.default annotation must be lossless JSON data"}},
		{"annotation string", `{"type":"json","title":false,"description":5}`, []string{"schema.description must be a string", "schema.title must be a string"}},
		{"nested subset violations all reported", `{"type":"array","items":{"oneOf":[{"type":"number","const":-0},{"type":"string","examples":[1e999]}]}}`, []string{
			"schema.items.oneOf[0].const must be a number value",
			"schema.items.oneOf[1].examples annotation must be lossless JSON data",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileValue([]byte(tt.dsl))
			if err == nil {
				t.Fatalf("accepted as %s", s)
			}
			if diff := cmp.Diff(tt.want, violationsOf(t, err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSFormatting(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables, so the sum is rounded as at run time
	numbers := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-5, "-5"}, {1.5, "1.5"}, {0.1, "0.1"}, {100, "100"},
		{1e20, "100000000000000000000"}, {1e21, "1e+21"}, {1.5e21, "1.5e+21"},
		{123456789012345680000, "123456789012345680000"},
		{0.000001, "0.000001"}, {1e-7, "1e-7"}, {1.25e-7, "1.25e-7"}, {-1e-7, "-1e-7"},
		{5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
		{tenth + fifth, "0.30000000000000004"}, {9007199254740993, "9007199254740992"},
	}
	for _, n := range numbers {
		if got := string(appendJSNumber(nil, n.f)); got != n.want {
			t.Errorf("number %v: got %s, want %s", n.f, got, n.want)
		}
	}
	strs := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"<a&b>", `"<a&b>"`},
		{"\u2028\u2029é😀", "\"\u2028\u2029é😀\""},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
	}
	for _, s := range strs {
		if got := string(appendJSString(nil, s.in)); got != s.want {
			t.Errorf("string %q: got %s, want %s", s.in, got, s.want)
		}
	}
}
