package jsonschema

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	noteParamsDSL = `{"title":{"type":"string","required":true,"description":"Note title"}}`
	noteOutputDSL = `{"type":"object","additionalProperties":false,"properties":{"title":{"type":"string","required":true},"lines":{"type":"array","required":true,"items":{"type":"string"}}}}`
)

func mustParse(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := Parse([]byte(schema))
	if err != nil {
		t.Fatalf("Parse(%s): %v", schema, err)
	}
	return s
}

func mustValue(t testing.TB, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("Unmarshal(%s): %v", text, err)
	}
	return v
}

func TestValidate(t *testing.T) {
	const open = `{"type":"object","properties":{"file":{"type":"string"},"nested":{"type":"object","properties":{"line":{"type":"integer"}},"required":["line"],"additionalProperties":false}},"required":["file"]}`
	const nested = `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"required":["b"],"additionalProperties":false},"list":{"type":"array","items":{"type":"integer"}}}}`
	tests := []struct {
		name, schema, value string
		// want and wantArgs are the violations for the "value" and "" roots.
		want, wantArgs []string
	}{
		{"string ok", `{"type":"string"}`, `"x"`, nil, nil},
		{"string", `{"type":"string"}`, `1`, []string{`"value" must be a string`}, []string{`"arguments" must be a string`}},
		{"number", `{"type":"number"}`, `"1"`, []string{`"value" must be a number`}, []string{`"arguments" must be a number`}},
		{"number ok", `{"type":"number"}`, `1.5`, nil, nil},
		{"integer", `{"type":"integer"}`, `1.5`, []string{`"value" must be an integer`}, []string{`"arguments" must be an integer`}},
		{"integer from string", `{"type":"integer"}`, `"2"`, []string{`"value" must be an integer`}, []string{`"arguments" must be an integer`}},
		{"integer ok", `{"type":"integer"}`, `2.0`, nil, nil},
		{"integer large", `{"type":"integer"}`, `1e300`, nil, nil},
		{"boolean", `{"type":"boolean"}`, `"true"`, []string{`"value" must be a boolean`}, []string{`"arguments" must be a boolean`}},
		{"null", `{"type":"null"}`, `0`, []string{`"value" must be null`}, []string{`"arguments" must be null`}},
		{"null ok", `{"type":"null","enum":[null],"const":null}`, `null`, nil, nil},
		{"object", `{"type":"object"}`, `"x"`, []string{`"value" must be an object`}, []string{`"arguments" must be an object`}},
		{"object from array", `{"type":"object"}`, `[]`, []string{`"value" must be an object`}, []string{`"arguments" must be an object`}},
		{"object from null", `{"type":"object"}`, `null`, []string{`"value" must be an object`}, []string{`"arguments" must be an object`}},
		{"array", `{"type":"array","items":{"type":"integer"}}`, `{}`, []string{`"value" must be an array`}, []string{`"arguments" must be an array`}},
		{"array items", `{"type":"array","items":{"type":"integer"}}`, `[1,1.5,"x"]`,
			[]string{`"value[1]" must be an integer`, `"value[2]" must be an integer`},
			[]string{`"[1]" must be an integer`, `"[2]" must be an integer`}},
		{"array without items takes any JSON", `{"type":"array"}`, `[1,"x",{"a":[null]}]`, nil, nil},

		{"enum", `{"type":"string","enum":["a","b"],"const":"a"}`, `"c"`, []string{`"value" must be one of ["a","b"]`}, []string{`"arguments" must be one of ["a","b"]`}},
		{"const", `{"type":"string","enum":["a","b"],"const":"a"}`, `"b"`, []string{`"value" must be "a"`}, []string{`"arguments" must be "a"`}},
		{"enum and const ok", `{"type":"string","enum":["a","b"],"const":"a"}`, `"a"`, nil, nil},
		{"enum escapes", `{"type":"string","enum":["<a&b>","q\"uote","back\\slash","nl\n","\u0001","\u2028"]}`, `"z"`,
			[]string{"\"value\" must be one of [\"<a&b>\",\"q\\\"uote\",\"back\\\\slash\",\"nl\\n\",\"\\u0001\",\"\u2028\"]"},
			[]string{"\"arguments\" must be one of [\"<a&b>\",\"q\\\"uote\",\"back\\\\slash\",\"nl\\n\",\"\\u0001\",\"\u2028\"]"}},
		{"number enum", `{"type":"number","enum":[1,1.5,1e21,1e-7,-5]}`, `2`, []string{`"value" must be one of [1,1.5,1e+21,1e-7,-5]`}, []string{`"arguments" must be one of [1,1.5,1e+21,1e-7,-5]`}},
		{"number enum ok", `{"type":"number","enum":[1,1.5,1e21,1e-7,-5]}`, `1e21`, nil, nil},
		{"number const", `{"type":"number","const":1e21}`, `1`, []string{`"value" must be 1e+21`}, []string{`"arguments" must be 1e+21`}},
		{"integer const", `{"type":"integer","const":-5}`, `5`, []string{`"value" must be -5`}, []string{`"arguments" must be -5`}},
		{"const string escapes", `{"type":"string","const":"say \"hi\"\t<&>"}`, `"x"`, []string{`"value" must be "say \"hi\"\t<&>"`}, []string{`"arguments" must be "say \"hi\"\t<&>"`}},
		{"boolean enum", `{"type":"boolean","enum":[true]}`, `false`, []string{`"value" must be one of [true]`}, []string{`"arguments" must be one of [true]`}},
		{"boolean const", `{"type":"boolean","const":false}`, `true`, []string{`"value" must be false`}, []string{`"arguments" must be false`}},
		{"type before enum", `{"type":"integer","enum":[1]}`, `"1"`, []string{`"value" must be an integer`}, []string{`"arguments" must be an integer`}},

		{"open object ok", open, `{"file":"a","extra":[1],"nested":{"line":2}}`, nil, nil},
		{"missing required", open, `{"nested":{"line":1}}`, []string{`missing required property "value.file"`}, []string{`missing required property "file"`}},
		{"required then children", open, `{"file":1,"nested":{}}`,
			[]string{`"value.file" must be a string`, `missing required property "value.nested.line"`},
			[]string{`"file" must be a string`, `missing required property "nested.line"`}},
		{"undeclared property", open, `{"file":"a","nested":{"line":1,"extra":true}}`,
			[]string{`"value.nested.extra" is not a declared property (additionalProperties: false)`},
			[]string{`"nested.extra" is not a declared property (additionalProperties: false)`}},
		{"required, children, then undeclared", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"z":{},"y":{}},"required":["z","y"],"additionalProperties":false}`, `{"b":1,"x":1,"a":2,"10":0,"9":0,"_":0}`,
			[]string{
				`missing required property "value.z"`,
				`missing required property "value.y"`,
				`"value.a" must be a string`,
				`"value.b" must be a string`,
				`"value.9" is not a declared property (additionalProperties: false)`,
				`"value.10" is not a declared property (additionalProperties: false)`,
				`"value._" is not a declared property (additionalProperties: false)`,
				`"value.x" is not a declared property (additionalProperties: false)`,
			},
			[]string{
				`missing required property "z"`,
				`missing required property "y"`,
				`"a" must be a string`,
				`"b" must be a string`,
				`"9" is not a declared property (additionalProperties: false)`,
				`"10" is not a declared property (additionalProperties: false)`,
				`"_" is not a declared property (additionalProperties: false)`,
				`"x" is not a declared property (additionalProperties: false)`,
			}},
		{"closed without properties", `{"type":"object","additionalProperties":false}`, `{"toString":1}`,
			[]string{`"value.toString" is not a declared property (additionalProperties: false)`},
			[]string{`"toString" is not a declared property (additionalProperties: false)`}},
		{"undeclared prototype names are absent", `{"type":"object","properties":{"toString":{"type":"string"}},"required":["toString"]}`, `{}`,
			[]string{`missing required property "value.toString"`}, []string{`missing required property "toString"`}},
		{"null counts as present", `{"type":"object","properties":{"x":{}},"required":["x"]}`, `{"x":null}`, nil, nil},
		{"nested paths", nested, `{"a":{"c":1},"list":[1,"x",2.5]}`,
			[]string{
				`missing required property "value.a.b"`,
				`"value.a.c" is not a declared property (additionalProperties: false)`,
				`"value.list[1]" must be an integer`,
				`"value.list[2]" must be an integer`,
			},
			[]string{
				`missing required property "a.b"`,
				`"a.c" is not a declared property (additionalProperties: false)`,
				`"list[1]" must be an integer`,
				`"list[2]" must be an integer`,
			}},
		{"nested type", nested, `{"a":{"b":false}}`, []string{`"value.a.b" must be a string`}, []string{`"a.b" must be a string`}},
		{"array of objects", `{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}}`, `[{"k":"a"},{},{"k":1}]`,
			[]string{`missing required property "value[1].k"`, `"value[2].k" must be a string`},
			[]string{`missing required property "[1].k"`, `"[2].k" must be a string`}},
		{"empty key at the argument root", `{"type":"object","properties":{"":{"type":"string"}}}`, `{"":1}`,
			[]string{`"value." must be a string`}, []string{`"arguments" must be a string`}},

		{"oneOf ok", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `"x"`, nil, nil},
		{"oneOf matched 0", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `null`,
			[]string{`"value" must match exactly one oneOf branch (matched 0)`}, []string{`"arguments" must match exactly one oneOf branch (matched 0)`}},
		{"oneOf matched 2", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1`,
			[]string{`"value" must match exactly one oneOf branch (matched 2)`}, []string{`"arguments" must match exactly one oneOf branch (matched 2)`}},
		{"oneOf overlap, one match", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1.5`, nil, nil},
		{"oneOf matched 3", `{"oneOf":[{},{"type":"string"},{"type":"string","enum":["x"]}]}`, `"x"`,
			[]string{`"value" must match exactly one oneOf branch (matched 3)`}, []string{`"arguments" must match exactly one oneOf branch (matched 3)`}},
		{"oneOf hides branch violations", `{"type":"object","properties":{"v":{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"b":{"type":"number"}},"required":["b"]}]}}}`, `{"v":{"b":"x"}}`,
			[]string{`"value.v" must match exactly one oneOf branch (matched 0)`}, []string{`"v" must match exactly one oneOf branch (matched 0)`}},
		{"oneOf object branches", `{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"b":{"type":"number"}},"required":["b"]}]}`, `{"a":"x","b":1}`, nil, nil},
		{"nested oneOf counts as one", `{"oneOf":[{"oneOf":[{"type":"string"},{"type":"number"}]},{"type":"integer"}]}`, `1`,
			[]string{`"value" must match exactly one oneOf branch (matched 2)`}, []string{`"arguments" must match exactly one oneOf branch (matched 2)`}},
		{"nested oneOf fails", `{"oneOf":[{"oneOf":[{"type":"string"},{"type":"number"}]},{"type":"integer"}]}`, `null`,
			[]string{`"value" must match exactly one oneOf branch (matched 0)`}, []string{`"arguments" must match exactly one oneOf branch (matched 0)`}},
		{"nested oneOf ok", `{"oneOf":[{"oneOf":[{"type":"string"},{"type":"number"}]},{"type":"integer"}]}`, `2.5`, nil, nil},
		{"oneOf inside array items", `{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"null"}]}}`, `["a",null,3]`,
			[]string{`"value[2]" must match exactly one oneOf branch (matched 0)`}, []string{`"[2]" must match exactly one oneOf branch (matched 0)`}},

		{"any JSON", `{}`, `{"x":[1,null,{"y":"z"}]}`, nil, nil},
		{"any JSON property", `{"type":"object","properties":{"x":{"description":"any"}},"required":["x"]}`, `{"x":[true]}`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.schema)
			v := mustValue(t, tt.value)
			if diff := cmp.Diff(tt.want, s.Validate(v, "value")); diff != "" {
				t.Errorf("root value (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantArgs, s.Validate(v, "")); diff != "" {
				t.Errorf("root arguments (-want +got):\n%s", diff)
			}
		})
	}
}

type point struct{ X, Y int }

func TestValidateNonJSON(t *testing.T) {
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap
	cyclicSlice := make([]any, 1)
	cyclicSlice[0] = cyclicSlice
	deepCycle := map[string]any{"a": []any{map[string]any{}}}
	deepCycle["a"].([]any)[0].(map[string]any)["back"] = deepCycle
	shared := map[string]any{"k": 1.0}
	dag := map[string]any{"a": shared, "b": []any{shared, shared}}
	negZero := math.Copysign(0, -1)

	tests := []struct {
		name, schema string
		value        any
		want         []string
	}{
		{"struct as any", `{}`, point{1, 2}, []string{`"value" must be a lossless JSON value`}},
		{"struct as object", `{"type":"object"}`, point{1, 2}, []string{`"value" must be an object`}},
		{"pointer as object", `{"type":"object"}`, &point{}, []string{`"value" must be an object`}},
		{"chan as string", `{"type":"string"}`, make(chan int), []string{`"value" must be a string`}},
		{"func as any", `{}`, func() {}, []string{`"value" must be a lossless JSON value`}},
		{"int as number", `{"type":"number"}`, 1, []string{`"value" must be a number`}},
		{"int as integer", `{"type":"integer"}`, int64(1), []string{`"value" must be an integer`}},
		{"NaN", `{"type":"number"}`, math.NaN(), []string{`"value" must be a finite JSON number`}},
		{"+Inf", `{"type":"number"}`, math.Inf(1), []string{`"value" must be a finite JSON number`}},
		{"-0", `{"type":"number"}`, negZero, []string{`"value" must be a finite JSON number`}},
		{"-0 integer", `{"type":"integer"}`, negZero, []string{`"value" must be an integer`}},
		{"NaN any", `{}`, math.NaN(), []string{`"value" must be a lossless JSON value`}},
		{"-0 any", `{}`, negZero, []string{`"value" must be a lossless JSON value`}},
		{"NaN in oneOf", `{"oneOf":[{"type":"number"},{"type":"string"}]}`, math.NaN(), []string{`"value" must match exactly one oneOf branch (matched 0)`}},
		{"typed map", `{"type":"object"}`, map[string]int{"a": 1}, []string{`"value" must be an object`}},
		{"nil map", `{"type":"object"}`, map[string]any(nil), []string{`"value" must be an object`}},
		{"typed slice", `{"type":"array"}`, []string{"a"}, []string{`"value" must be an array`}},
		{"nil slice", `{"type":"array"}`, []any(nil), []string{`"value" must be an array`}},
		{"nil slice as any", `{}`, []any(nil), []string{`"value" must be a lossless JSON value`}},
		{"typed nil is not null", `{"type":"null"}`, (*point)(nil), []string{`"value" must be null`}},
		{"lossy undeclared property", `{"type":"object"}`, map[string]any{"x": math.Inf(-1)}, []string{`"value" must be a lossless JSON object`}},
		{"lossy nested undeclared property", `{"type":"object","properties":{"a":{"type":"string"}}}`, map[string]any{"a": "ok", "b": []any{1.0, map[string]any{"c": point{}}}}, []string{`"value" must be a lossless JSON object`}},
		{"lossy declared property", `{"type":"object","properties":{"x":{}},"required":["x"]}`, map[string]any{"x": math.NaN()}, []string{`"value.x" must be a lossless JSON value`}},
		{"lossy item without items schema", `{"type":"array"}`, []any{1.0, negZero}, []string{`"value" must be a dense lossless JSON array`}},
		{"lossy nested item", `{"type":"array","items":{"type":"array"}}`, []any{[]any{}, []any{point{}}}, []string{`"value[1]" must be a dense lossless JSON array`}},
		{"violations hide lossiness", `{"type":"object","properties":{"a":{"type":"string"}}}`, map[string]any{"a": 1.0, "b": math.NaN()}, []string{`"value.a" must be a string`}},
		{"cyclic map as any", `{}`, cyclicMap, []string{`"value" must be a lossless JSON value`}},
		{"cyclic map as object", `{"type":"object"}`, cyclicMap, []string{`"value" must be a lossless JSON object`}},
		{"cyclic map through declared property", `{"type":"object","properties":{"self":{"type":"object"}}}`, cyclicMap, []string{`"value.self" must be a lossless JSON object`}},
		{"cyclic slice", `{"type":"array"}`, cyclicSlice, []string{`"value" must be a dense lossless JSON array`}},
		{"cyclic slice with items", `{"type":"array","items":{"type":"array","items":{}}}`, cyclicSlice, []string{`"value[0][0]" must be a lossless JSON value`}},
		{"deep cycle", `{}`, deepCycle, []string{`"value" must be a lossless JSON value`}},
		{"shared subtrees are fine", `{}`, dag, nil},
		{"json.Number integer", `{"type":"integer","enum":[2]}`, json.Number("2.0"), nil},
		{"json.Number fraction", `{"type":"integer"}`, json.Number("1.5"), []string{`"value" must be an integer`}},
		{"json.Number negative zero", `{"type":"number"}`, json.Number("-0"), []string{`"value" must be a finite JSON number`}},
		{"json.Number overflow", `{"type":"number"}`, json.Number("1e400"), []string{`"value" must be a finite JSON number`}},
		{"json.Number underflow is zero", `{"type":"number","const":0}`, json.Number("1e-400"), nil},
		{"json.Number not a number", `{"type":"number"}`, json.Number("NaN"), []string{`"value" must be a number`}},
		{"json.Number not a string", `{"type":"string"}`, json.Number("1"), []string{`"value" must be a string`}},
		{"json.Number bad as any", `{}`, json.Number("0x10"), []string{`"value" must be a lossless JSON value`}},
		{"json.Number in tree", `{}`, map[string]any{"n": []any{json.Number("12")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.schema)
			if diff := cmp.Diff(tt.want, s.Validate(tt.value, "value")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateCompiled(t *testing.T) {
	params, err := CompileParameters([]byte(noteParamsDSL))
	if err != nil {
		t.Fatal(err)
	}
	note, err := CompileValue([]byte(noteOutputDSL))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		s      *Schema
		value  string
		root   string
		want   []string
		errMsg string
	}{
		{"args ok", params, `{"title":"Demo"}`, "", nil, ""},
		{"args open root", params, `{"title":"Demo","extra":1}`, "", nil, ""},
		{"args missing", params, `{}`, "", []string{`missing required property "title"`}, `invalid arguments: missing required property "title"`},
		{"args wrong type", params, `{"title":5}`, "", []string{`"title" must be a string`}, `invalid arguments: "title" must be a string`},
		{"args not an object", params, `"Demo"`, "", []string{`"arguments" must be an object`}, `invalid arguments: "arguments" must be an object`},
		{"note ok", note, `{"title":"t","lines":["a","b"]}`, "value", nil, ""},
		{"note bad line", note, `{"title":"t","lines":["a",2]}`, "value", []string{`"value.lines[1]" must be a string`}, ""},
		{"note everything", note, `{"lines":"x","more":1}`, "value", []string{
			`missing required property "value.title"`,
			`"value.lines" must be an array`,
			`"value.more" is not a declared property (additionalProperties: false)`,
		}, ""},
		{"json output accepts any JSON", mustCompileValue(t, `{"type":"json"}`), `[{"a":null}]`, "value", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.Validate(mustValue(t, tt.value), tt.root)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.root == "" {
				err := tt.s.ValidateArgs(mustValue(t, tt.value))
				switch {
				case tt.errMsg == "" && err != nil:
					t.Errorf("ValidateArgs = %v, want nil", err)
				case tt.errMsg != "" && (err == nil || err.Error() != tt.errMsg):
					t.Errorf("ValidateArgs = %v, want %q", err, tt.errMsg)
				case err != nil && !cmp.Equal(err.(*ArgsError).Violations, got):
					t.Errorf("ArgsError violations %q", err.(*ArgsError).Violations)
				}
			}
		})
	}
}

func mustCompileValue(t testing.TB, dsl string) *Schema {
	t.Helper()
	s, err := CompileValue([]byte(dsl))
	if err != nil {
		t.Fatalf("CompileValue(%s): %v", dsl, err)
	}
	return s
}

func TestZeroSchema(t *testing.T) {
	var s Schema
	if got := s.Validate(map[string]any{"a": []any{1.0}}, "value"); got != nil {
		t.Errorf("zero schema rejected JSON: %q", got)
	}
	if got := s.Validate(math.NaN(), "value"); !cmp.Equal(got, []string{`"value" must be a lossless JSON value`}) {
		t.Errorf("zero schema: %q", got)
	}
	if b, _ := s.MarshalJSON(); string(b) != "{}" {
		t.Errorf("zero schema marshals as %s", b)
	}
}

// TestDeep checks that deep schemas and values neither overflow the stack nor
// take quadratic time.
func TestDeep(t *testing.T) {
	const depth = 100000
	schema := strings.Repeat(`{"type":"array","items":`, depth) + `{"type":"string"}` + strings.Repeat(`}`, depth)
	s := mustParse(t, schema)
	var v any = "leaf"
	for i := 0; i < depth; i++ {
		v = []any{v}
	}
	if got := s.Validate(v, "value"); got != nil {
		t.Fatalf("deep valid value: %d violations", len(got))
	}
	var bad any = 1.0
	for i := 0; i < depth; i++ {
		bad = []any{bad}
	}
	got := s.Validate(bad, "value")
	want := `"value` + strings.Repeat("[0]", depth) + `" must be a string`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("deep invalid value: got %d violations", len(got))
	}
	// A deep value under an any-JSON schema goes through the lossless walk.
	if got := (&Schema{}).Validate(v, "value"); got != nil {
		t.Fatalf("deep lossless value: %q", got)
	}
	// Deep oneOf nesting, compiled through the DSL.
	dsl := strings.Repeat(`{"oneOf":[`, 5000) + `{"type":"string"}` + strings.Repeat(`,{"type":"null"}]}`, 5000)
	u := mustCompileValue(t, dsl)
	if got := u.Validate("x", "value"); got != nil {
		t.Fatalf("deep oneOf: %q", got)
	}
	if got := u.Validate(1.0, "value"); !cmp.Equal(got, []string{`"value" must match exactly one oneOf branch (matched 0)`}) {
		t.Fatalf("deep oneOf mismatch: %q", got)
	}
	wire := u.String()
	if !strings.HasPrefix(wire, `{"oneOf":[{"oneOf":[`) || strings.Count(wire, "oneOf") != 5000 {
		t.Fatalf("deep oneOf wire: %.60s", wire)
	}
}

func TestValidateAllocs(t *testing.T) {
	params, err := CompileParameters([]byte(noteParamsDSL))
	if err != nil {
		t.Fatal(err)
	}
	note := mustCompileValue(t, noteOutputDSL)
	args := mustValue(t, `{"title":"Demo"}`)
	out := mustValue(t, `{"title":"t","lines":["a","b"]}`)
	anyJSON := mustValue(t, `{"a":[1,{"b":null}],"c":"d"}`)
	zero := &Schema{}
	for name, f := range map[string]func(){
		"args":    func() { params.Validate(args, "") },
		"note":    func() { note.Validate(out, "value") },
		"anyJSON": func() { zero.Validate(anyJSON, "value") },
	} {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocs per valid Validate, want 0", name, n)
		}
	}
}

func BenchmarkValidateNote(b *testing.B) {
	note := mustCompileValue(b, noteOutputDSL)
	v := map[string]any{"title": "Shopping", "lines": []any{"milk", "eggs"}}
	b.ReportAllocs()
	for b.Loop() {
		if r := note.Validate(v, "value"); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkValidateArgs(b *testing.B) {
	params, err := CompileParameters([]byte(noteParamsDSL))
	if err != nil {
		b.Fatal(err)
	}
	v := map[string]any{"title": "Demo"}
	b.ReportAllocs()
	for b.Loop() {
		if r := params.Validate(v, ""); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkValidateNoteInvalid(b *testing.B) {
	note := mustCompileValue(b, noteOutputDSL)
	v := map[string]any{"lines": []any{"milk", 2.0}, "extra": true}
	b.ReportAllocs()
	for b.Loop() {
		if r := note.Validate(v, "value"); len(r) != 3 {
			b.Fatal(r)
		}
	}
}
