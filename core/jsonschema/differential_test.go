//go:build dshoracle

package jsonschema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Build with -tags dshoracle.
//
// TestDifferentialDSH compares this package with dsh itself on random schemas,
// DSL specs and values. It runs only when PRISM_DSH_ORACLE names a command
// (run through sh -c) that reads one JSON request per line on stdin and
// writes one JSON response per line:
//
//	{"op":"parse"|"object"|"value"|"params","schema":"<JSON text>"}
//	  -> {"ok":"<JSON.stringify of the accepted/compiled schema>"} or {"err":[violations]}
//	     (assertSupportedJsonSchema, assertObjectJsonSchema,
//	     valueSchemaSpecToJsonSchema, parameterSchemaSpecToJsonSchema on JSON.parse(schema))
//	{"op":"validate","schema":"<JSON text>","value":"<JSON text>","root":"value"|""}
//	  -> {"v":[violations]} (validateJsonSchemaValue)
//
// PRISM_DSH_CASES sets the number of random cases (default 3000).
func TestDifferentialDSH(t *testing.T) {
	oracle := os.Getenv("PRISM_DSH_ORACLE")
	if oracle == "" {
		t.Fatal("PRISM_DSH_ORACLE is not set (this file builds only with -tags dshoracle)")
	}
	n := 3000
	if s := os.Getenv("PRISM_DSH_CASES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	type request struct {
		Op     string `json:"op"`
		Schema string `json:"schema"`
		Value  string `json:"value,omitempty"`
		Root   string `json:"root"`
	}
	var reqs []request
	for i := 0; i < n; i++ {
		raw := genSchema(r, 0)
		dsl := genDSL(r, 0, false)
		params := genPropertyMap(r, 0)
		reqs = append(reqs,
			request{Op: "parse", Schema: raw},
			request{Op: "object", Schema: raw},
			request{Op: "value", Schema: dsl},
			request{Op: "params", Schema: params},
		)
		for _, schema := range []string{raw, dsl} {
			if _, err := Parse([]byte(schema)); err != nil {
				continue
			}
			for j := 0; j < 4; j++ {
				v := genValue(r, 0)
				reqs = append(reqs, request{Op: "validate", Schema: schema, Value: v, Root: []string{"", "value"}[j%2]})
			}
		}
		if s, err := CompileValue([]byte(dsl)); err == nil {
			for j := 0; j < 4; j++ {
				reqs = append(reqs, request{Op: "validate", Schema: s.String(), Value: genValue(r, 0), Root: "value"})
			}
		}
		if s, err := CompileParameters([]byte(params)); err == nil {
			for j := 0; j < 4; j++ {
				reqs = append(reqs, request{Op: "validate", Schema: s.String(), Value: genValue(r, 0), Root: ""})
			}
		}
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, q := range reqs {
		if err := enc.Encode(q); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "-c", oracle)
	cmd.Stdin = &in
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	type response struct {
		OK    *string  `json:"ok"`
		Err   []string `json:"err"`
		V     []string `json:"v"`
		Throw *string  `json:"throw"`
	}
	failures, compared := 0, map[string]int{}
	for i := 0; sc.Scan(); i++ {
		if i >= len(reqs) {
			t.Fatal("oracle wrote more responses than requests")
		}
		q := reqs[i]
		var want response
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatalf("oracle response %q: %v", sc.Text(), err)
		}
		if want.Throw != nil {
			t.Errorf("%s %s: dsh threw %s", q.Op, q.Schema, *want.Throw)
			continue
		}
		var got response
		switch q.Op {
		case "validate":
			s, err := Parse([]byte(q.Schema))
			if err != nil {
				t.Fatalf("validate request with bad schema %s", q.Schema)
			}
			dec := json.NewDecoder(strings.NewReader(q.Value))
			dec.UseNumber() // so that 1e400 reads as +Inf, as JSON.parse reads it
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("value %s: %v", q.Value, err)
			}
			got.V = s.Validate(v, q.Root)
			if got.V == nil {
				got.V = []string{}
			}
			if want.V == nil {
				want.V = []string{}
			}
		default:
			f := map[string]func([]byte) (*Schema, error){"parse": Parse, "object": ParseObject, "value": CompileValue, "params": CompileParameters}[q.Op]
			s, err := f([]byte(q.Schema))
			var se *Error
			switch {
			case err == nil:
				w := s.String()
				got.OK = &w
			case errors.As(err, &se):
				got.Err = se.Violations
			default:
				t.Fatalf("%s %s: %v", q.Op, q.Schema, err)
			}
		}
		compared[q.Op]++
		switch {
		case got.OK != nil:
			compared[q.Op+"/ok"]++
		case len(got.Err) > 1:
			compared[q.Op+"/errs"]++
		case len(got.V) > 0:
			compared[q.Op+"/violations"]++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			failures++
			if failures <= 20 {
				t.Errorf("%s schema=%s value=%s root=%q (-dsh +prism):\n%s", q.Op, q.Schema, q.Value, q.Root, diff)
			}
		}
	}
	t.Logf("compared %v; %d differences", compared, failures)
	if sum := compared["parse"] + compared["object"] + compared["value"] + compared["params"] + compared["validate"]; sum != len(reqs) {
		t.Fatalf("compared %d of %d requests", sum, len(reqs))
	}
}

var genKeys = []string{"a", "b", "c", "0", "2", "10", "a.b", "__proto__", "", "toString", "é"}
var genNumbers = []string{"0", "1", "2", "1.5", "-5", "1e21", "1e-7", "-0", "1e400", "3", "2.0", "0.1"}
var genStrings = []string{`"a"`, `"b"`, `"x"`, `"<&>"`, `"q\"\\"`, `"\u0001\n"`, `"\u2028"`, `""`}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func genScalar(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return "null"
	case 1:
		return pick(r, []string{"true", "false"})
	case 2, 3:
		return pick(r, genNumbers)
	}
	return pick(r, genStrings)
}

func genValue(r *rand.Rand, depth int) string {
	if depth > 3 || r.IntN(3) == 0 {
		return genScalar(r)
	}
	if r.IntN(2) == 0 {
		var items []string
		for i := r.IntN(4); i > 0; i-- {
			items = append(items, genValue(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	keys := map[string]bool{}
	for i := r.IntN(4); i > 0; i-- {
		keys[pick(r, genKeys)] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sortKeys(ks) // the order this package visits a Go map, and so also JSON.parse's order
	var members []string
	for _, k := range ks {
		members = append(members, strconv.Quote(k)+":"+genValue(r, depth+1))
	}
	return "{" + strings.Join(members, ",") + "}"
}

type member struct{ k, v string }

func object(r *rand.Rand, ms []member) string {
	r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	var parts []string
	for _, m := range ms {
		parts = append(parts, strconv.Quote(m.k)+":"+m.v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func genAnnotations(r *rand.Rand, ms []member) []member {
	if r.IntN(4) == 0 {
		ms = append(ms, member{"description", pick(r, []string{`"d"`, `1`})})
	}
	if r.IntN(6) == 0 {
		ms = append(ms, member{"title", pick(r, []string{`"t"`, `null`})})
	}
	if r.IntN(6) == 0 {
		ms = append(ms, member{pick(r, []string{"default", "examples"}), genValue(r, 2)})
	}
	if r.IntN(12) == 0 {
		ms = append(ms, member{pick(r, []string{"pattern", "minimum", "anyOf", "x"}), "1"})
	}
	return ms
}

func genEnumConst(r *rand.Rand, ms []member, typ string) []member {
	lit := func() string {
		switch typ {
		case "string":
			return pick(r, genStrings)
		case "number", "integer":
			return pick(r, genNumbers)
		case "boolean":
			return pick(r, []string{"true", "false"})
		case "null":
			return "null"
		}
		return genScalar(r)
	}
	if r.IntN(10) == 0 {
		lit = func() string { return genScalar(r) }
	}
	if r.IntN(3) == 0 {
		var items []string
		for i := r.IntN(4); i > 0; i-- {
			items = append(items, lit())
		}
		e := "[" + strings.Join(items, ",") + "]"
		if r.IntN(15) == 0 {
			e = lit()
		}
		ms = append(ms, member{"enum", e})
	}
	if r.IntN(4) == 0 {
		ms = append(ms, member{"const", lit()})
	}
	return ms
}

var genTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

func genSchema(r *rand.Rand, depth int) string {
	if depth > 3 {
		return object(r, []member{{"type", strconv.Quote(pick(r, genTypes[2:]))}})
	}
	var ms []member
	switch n := r.IntN(20); {
	case n == 0:
		return genScalar(r)
	case n < 3:
		// oneOf
		var bs []string
		for i := r.IntN(4); i > 0; i-- {
			bs = append(bs, genSchema(r, depth+1))
		}
		ms = append(ms, member{"oneOf", "[" + strings.Join(bs, ",") + "]"})
		if r.IntN(8) == 0 {
			ms = append(ms, member{pick(r, oneOfSiblings[:]), "{}"})
		}
		if r.IntN(12) == 0 {
			ms = append(ms, member{"type", `"string"`})
		}
	case n < 4:
		// no type
		if r.IntN(3) == 0 {
			ms = append(ms, member{pick(r, oneOfSiblings[:]), "[]"})
		}
	default:
		typ := pick(r, genTypes)
		t := strconv.Quote(typ)
		if r.IntN(25) == 0 {
			t = pick(r, []string{`"tuple"`, `["string","null"]`, `5`})
		}
		ms = append(ms, member{"type", t})
		switch typ {
		case "object":
			var names []string
			if r.IntN(4) != 0 {
				var props []member
				seen := map[string]bool{}
				for i := r.IntN(4); i > 0; i-- {
					k := pick(r, genKeys)
					if seen[k] {
						continue
					}
					seen[k] = true
					names = append(names, k)
					props = append(props, member{k, genSchema(r, depth+1)})
				}
				p := object(r, props)
				if r.IntN(20) == 0 {
					p = "[]"
				}
				ms = append(ms, member{"properties", p})
			}
			if r.IntN(2) == 0 {
				var req []string
				for _, k := range names {
					if r.IntN(2) == 0 {
						req = append(req, strconv.Quote(k))
					}
				}
				if r.IntN(10) == 0 {
					req = append(req, `"zz"`)
				}
				v := "[" + strings.Join(req, ",") + "]"
				if r.IntN(20) == 0 {
					v = `"a"`
				}
				ms = append(ms, member{"required", v})
			}
			if r.IntN(2) == 0 {
				ms = append(ms, member{"additionalProperties", pick(r, []string{"true", "false", "false", `{}`})})
			}
		case "array":
			if r.IntN(3) != 0 {
				ms = append(ms, member{"items", genSchema(r, depth+1)})
			}
		default:
			ms = genEnumConst(r, ms, typ)
		}
		if r.IntN(15) == 0 {
			ms = append(ms, member{pick(r, oneOfSiblings[:]), "{}"})
		}
	}
	return object(r, genAnnotations(r, ms))
}

var dslTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null", "json"}

func genDSL(r *rand.Rand, depth int, property bool) string {
	var ms []member
	if property && r.IntN(3) == 0 {
		ms = append(ms, member{"required", pick(r, []string{"true", "true", "true", "false", "1"})})
	}
	switch n := r.IntN(20); {
	case n == 0:
		return genScalar(r)
	case n < 3 && depth < 3:
		var bs []string
		for i := r.IntN(4); i > 0; i-- {
			bs = append(bs, genDSL(r, depth+1, r.IntN(15) == 0))
		}
		v := "[" + strings.Join(bs, ",") + "]"
		if r.IntN(15) == 0 {
			v = `"x"`
		}
		ms = append(ms, member{"oneOf", v})
		if r.IntN(15) == 0 {
			ms = append(ms, member{"type", `"string"`})
		}
	default:
		typ := pick(r, dslTypes)
		if depth >= 3 && (typ == "object" || typ == "array") {
			typ = "string"
		}
		t := strconv.Quote(typ)
		if r.IntN(30) == 0 {
			t = pick(r, []string{`"tuple"`, `5`})
		}
		if r.IntN(30) != 0 {
			ms = append(ms, member{"type", t})
		}
		switch typ {
		case "object":
			if r.IntN(12) != 0 {
				ms = append(ms, member{"additionalProperties", pick(r, []string{"true", "false", `"no"`})})
			}
			if r.IntN(4) != 0 {
				p := genPropertyMap(r, depth+1)
				if r.IntN(20) == 0 {
					p = "[]"
				}
				ms = append(ms, member{"properties", p})
			}
		case "array":
			if r.IntN(3) != 0 {
				ms = append(ms, member{"items", genDSL(r, depth+1, r.IntN(15) == 0)})
			}
		case "json":
		default:
			ms = genEnumConst(r, ms, typ)
		}
	}
	if r.IntN(20) == 0 {
		ms = append(ms, member{pick(r, []string{"items", "extra", "properties", "enum"}), "{}"})
	}
	return object(r, genAnnotations(r, ms))
}

func genPropertyMap(r *rand.Rand, depth int) string {
	if r.IntN(40) == 0 {
		return genScalar(r)
	}
	var props []member
	seen := map[string]bool{}
	for i := r.IntN(4); i > 0; i-- {
		k := pick(r, genKeys)
		if seen[k] {
			continue
		}
		seen[k] = true
		props = append(props, member{k, genDSL(r, depth, true)})
	}
	return object(r, props)
}
