package jsonschema

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var fuzzSchemaSeeds = []string{
	`{}`,
	`{"type":"string"}`,
	`{"type":"object","properties":{"a":{"type":"string"},"10":{},"2":{"type":"array","items":{"type":"integer","enum":[1,2],"const":1}}},"required":["a"],"additionalProperties":false}`,
	`{"oneOf":[{"type":"string"},{"type":"null"}],"description":"d"}`,
	`{"type":"number","enum":[1e21,1e-7,-5,0.5],"default":-0}`,
	`{"type":["string"]}`,
	`{"type":"string","oneOf":[{},{}]}`,
	`{"title":"<&>\u2028","examples":[{"x":[1,"\u0000"]}],"a":1,"a":2}`,
	`{"properties":{},"required":[],"additionalProperties":true,"items":{},"enum":[],"const":null}`,
	noteOutputDSL,
	noteParamsDSL,
	`{"type":"json","default":null}`,
	`{"oneOf":[{"type":"object","additionalProperties":true,"properties":{"x":{"type":"string","required":true}}},{"type":"json"}]}`,
	`[1,2,{"a":null}]`,
	`"x"`,
	`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","required":false}}}`,
}

// FuzzParse checks that Parse and the DSL compilers never panic, and that an
// accepted schema marshals to JSON that Parse accepts again and marshals
// identically.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSchemaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name, compile := range map[string]func([]byte) (*Schema, error){
			"Parse":             Parse,
			"ParseObject":       ParseObject,
			"CompileValue":      CompileValue,
			"CompileParameters": CompileParameters,
		} {
			s, err := compile(raw)
			if err != nil {
				if s != nil {
					t.Fatalf("%s returned a schema and an error", name)
				}
				switch e := err.(type) {
				case *Error:
					if len(e.Violations) == 0 {
						t.Fatalf("%s: *Error without violations", name)
					}
				case *SyntaxError:
				default:
					t.Fatalf("%s: unexpected error type %T", name, err)
				}
				continue
			}
			wire, err := s.MarshalJSON()
			if err != nil {
				t.Fatalf("%s: MarshalJSON: %v", name, err)
			}
			if !json.Valid(wire) {
				t.Fatalf("%s: invalid wire JSON %q", name, wire)
			}
			again, err := Parse(wire)
			if err != nil {
				t.Fatalf("%s: wire %s does not re-Parse: %v", name, wire, err)
			}
			wire2, _ := again.MarshalJSON()
			if !bytes.Equal(wire, wire2) {
				t.Fatalf("%s: re-marshal differs:\n%s\n%s", name, wire, wire2)
			}
			// The accepted schema validates arbitrary values without panicking,
			// identically to its re-parsed wire form.
			for _, v := range []any{nil, "x", 1.0, map[string]any{"a": []any{1.0}}, []any{"x", nil}} {
				if diff := cmp.Diff(s.Validate(v, "value"), again.Validate(v, "value")); diff != "" {
					t.Fatalf("%s: wire form validates differently (-orig +wire):\n%s", name, diff)
				}
			}
		}
	})
}

var fuzzValidateSchemas = []string{
	`{}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","enum":["x","y"]}},"required":["b"],"additionalProperties":false},"n":{"type":"integer","const":3},"list":{"type":"array","items":{"oneOf":[{"type":"number"},{"type":"integer"},{"type":"null"}]}}},"required":["a"],"additionalProperties":false}`,
	`{"oneOf":[{"type":"array"},{"type":"object","additionalProperties":false},{"type":"string"},{"oneOf":[{"type":"boolean"},{"type":"number","enum":[1,2.5]}]}]}`,
	`{"type":"array","items":{"type":"array","items":{"type":"object","properties":{"k":{}}}}}`,
}

// FuzzValidate checks that validating arbitrary JSON values never panics, is
// deterministic, and does not depend on whether numbers are decoded as float64
// or json.Number.
func FuzzValidate(f *testing.F) {
	for _, v := range []string{
		`{"title":"t","lines":["a","b"]}`,
		`{"title":1,"lines":["a",2],"x":1,"0":2,"10":3,"9":4}`,
		`{"a":{"b":"z","c":1},"n":3.5,"list":[1,1.5,null,"x"]}`,
		`[[{"k":-0}],[1e400]]`,
		`-0`, `null`, `true`, `1e21`, `"\u2028"`, `[]`, `{}`,
	} {
		f.Add([]byte(v))
	}
	params, err := CompileParameters([]byte(noteParamsDSL))
	if err != nil {
		f.Fatal(err)
	}
	schemas := []*Schema{params}
	for _, s := range fuzzValidateSchemas {
		schemas = append(schemas, mustParse(f, s))
	}
	schemas = append(schemas, mustCompileValue(f, noteOutputDSL))
	f.Fuzz(func(t *testing.T, text []byte) {
		var plain any
		if err := json.Unmarshal(text, &plain); err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		var numbers any
		if err := dec.Decode(&numbers); err != nil {
			t.Fatalf("UseNumber decode failed where Unmarshal succeeded: %v", err)
		}
		for i, s := range schemas {
			for _, root := range []string{"", "value"} {
				got := s.Validate(plain, root)
				if again := s.Validate(plain, root); !cmp.Equal(got, again) {
					t.Fatalf("schema %d root %q: not deterministic:\n%q\n%q", i, root, got, again)
				}
				if withNumbers := s.Validate(numbers, root); !cmp.Equal(got, withNumbers) {
					t.Fatalf("schema %d root %q: float64 and json.Number differ:\n%q\n%q", i, root, got, withNumbers)
				}
			}
		}
		// The any-JSON schema accepts every decoded value except negative zero.
		if got := schemas[1].Validate(plain, "value"); got != nil && !cmp.Equal(got, []string{`"value" must be a lossless JSON value`}) {
			t.Fatalf("any-JSON schema: %q", got)
		}
	})
}

// FuzzValidJSON: ValidJSON never says true for a value Validate refuses
// (it may say false for a valid one: the caller then validates the tree),
// and says true for the valid values of the table below, so the fast path
// is taken.
func FuzzValidJSON(f *testing.F) {
	for _, v := range validJSONCases {
		f.Add([]byte(v.value))
	}
	for _, v := range []string{`{"title":1}`, `{"a":{"b":"q"}}`, `{"a":{"b":"x","c":1}}`, `[1,"x"]`, `{"title":"t","lines":["a",2]}`,
		`{"title":"t","title":"u","lines":[]}`, `{"\u0074itle":"t","lines":[]}`, `{"a":{"b":"\u0078"},"n":3.0}`, "\"\xff\"", `[[[[[]]]]]`} {
		f.Add([]byte(v))
	}
	schemas := validJSONSchemas(f)
	f.Fuzz(func(t *testing.T, text []byte) {
		var tree any
		if json.Unmarshal(text, &tree) != nil || !lossless(tree) {
			return // ValidJSON reads Snapshot's output: valid, lossless JSON
		}
		for i, s := range schemas {
			if s.ValidJSON(text) {
				if v := s.Validate(tree, "value"); v != nil {
					t.Fatalf("schema %d: ValidJSON(%s) = true, Validate = %q", i, text, v)
				}
			}
		}
	})
}

var validJSONCases = []struct {
	schema int
	value  string
}{
	{0, `{"title":"t","lines":["a","b"]}`},
	{0, ` { "lines" : [ ] , "title" : "\u00e9\n\"" } `},
	{1, `{"title":"x"}`},
	{1, `{"title":"x","extra":[1,{"y":null}]}`},
	{2, `{"a":{"b":"y"},"n":3,"list":[1.5,null,-2.25e-3]}`},
	{2, `{"a":{"b":"\u0078"},"n":3.0}`},
	{3, `[]`},
	{3, `{}`},
	{3, `"s"`},
	{3, `true`},
	{3, `2.5`},
	{4, `[[{"k":{"deep":[1,2]}}],[]]`},
	{5, `[1,"x",{"a":[true,null]}]`},
}

func validJSONSchemas(t testing.TB) []*Schema {
	params, err := CompileParameters([]byte(noteParamsDSL))
	if err != nil {
		t.Fatal(err)
	}
	out := []*Schema{mustCompileValue(t, noteOutputDSL), params}
	for _, s := range fuzzValidateSchemas[1:] {
		out = append(out, mustParse(t, s))
	}
	return append(out, mustParse(t, `{}`))
}

// TestValidJSONTakesTheFastPath: the valid values ValidJSON is for are
// recognised without the tree.
func TestValidJSONTakesTheFastPath(t *testing.T) {
	schemas := validJSONSchemas(t)
	for _, c := range validJSONCases {
		var tree any
		if err := json.Unmarshal([]byte(c.value), &tree); err != nil {
			t.Fatal(err)
		}
		if v := schemas[c.schema].Validate(tree, "value"); v != nil {
			t.Fatalf("case %s is not valid for schema %d: %q", c.value, c.schema, v)
		}
		if !schemas[c.schema].ValidJSON([]byte(c.value)) {
			t.Errorf("schema %d: ValidJSON(%s) = false for a valid value", c.schema, c.value)
		}
	}
	note := []byte(`{"title":"t","lines":["a","b"]}`)
	if n := testing.AllocsPerRun(100, func() { schemas[0].ValidJSON(note) }); n != 0 {
		t.Errorf("ValidJSON of a note value allocates %.0f times, want 0", n)
	}
}
