package views

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzJSONClip: the walking clip shows exactly what indenting the whole
// value and clipping it shows, for any JSON text and bounds.
func FuzzJSONClip(f *testing.F) {
	big := make([]any, 12)
	for i := range big {
		big[i] = map[string]any{"n": i, "text": strings.Repeat("é<&>\u007f", i%5), "empty": []any{}, "obj": map[string]any{}}
	}
	seed, _ := json.Marshal(map[string]any{"lines": big, "path": "/a b", "ok": true, "nil": nil, "f": -1.5e-3})
	for _, s := range []string{string(seed), `{}`, `[]`, `[[],{}]`, `{"a":{"b":[1,{"c":"d\"}"}]}}`, `"x"`, `1`, ` { "a" : [ 1 , 2 ] } `, `{"a":"\\\\"}`, `[1,`} {
		f.Add(s, 30, 12)
	}
	f.Fuzz(func(t *testing.T, s string, maxLines, maxRunes int) {
		maxLines, maxRunes = 1+abs(maxLines)%500, 1+abs(maxRunes)%200
		if len(s) > 64<<10 {
			return // keeps the fuzzer fast; the walk does not depend on size
		}
		got := jsonClip(s, maxLines, maxRunes, 0)
		want := newClipN(prettyJSON(s), maxLines, maxRunes)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("JSON %q (lines %d, runes %d):\nwalked   %+v\nindented %+v", s, maxLines, maxRunes, got, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestJSONClipEveryCut: for values whose tail starts on every kind of line
// (a member, a closing bracket, a nested container's first line), and for
// every number of shown lines, the clip built from the noted tail start
// equals the one indenting the whole value.
func TestJSONClipEveryCut(t *testing.T) {
	values := []string{
		`{"a":[1,2,{"b":[[],{}],"c":{"d":[3,[4,5]]}}],"e":"f\"}]","g":[{"h":null}]}`,
		`[[[[1]]],[[2],[3,[4,[5,6]]]],{"x":{"y":{"z":[7,8,9,10,11,12,13,14]}}}]`,
		` { "spaced" : [ 1 , { "k" : [ ] } , 2 , 3 , 4 , 5 , 6 , 7 , 8 ] , "t" : { "u" : 1 } }`,
	}
	// Ends of d closing lines: the tail starts on a closing bracket, an
	// opening line or a member, depending on d.
	for d := range 9 {
		values = append(values, "["+strings.Repeat("1,", 10)+strings.Repeat(`[{"k":`, d)+"7"+strings.Repeat("}]", d)+"]")
	}
	for _, s := range values {
		total := prettyLines(s, nil, nil)
		for maxLines := 1; maxLines <= total+1; maxLines++ {
			for _, maxRunes := range []int{3, 200} {
				got := jsonClip(s, maxLines, maxRunes, 0)
				want := newClipN(prettyJSON(s), maxLines, maxRunes)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("JSON %s (lines %d, runes %d):\nwalked   %+v\nindented %+v", s, maxLines, maxRunes, got, want)
				}
			}
		}
	}
}
