package core_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"prism/core"
)

// FuzzExecuteRawArguments feeds arbitrary model argument strings through the
// loop's parser and the whole pipeline: it must never panic, always produce
// dsh's result shape, and agree with the validator about what is valid.
func FuzzExecuteRawArguments(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"title":"Demo"}`, `{"title":1}`, `{"title":"x","extra":[1,2,{"a":null}]}`,
		`[]`, `"str"`, `{"title":`, `{"title":"x","n":-0}`, `{"title":"x","n":1e400}`, `{"title":"\u0000<script>"}`, "\xff\xfe"} {
		f.Add(s)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(nil))
	f.Fuzz(func(t *testing.T, raw string) {
		args := core.ParseArguments(raw)
		if s, isRaw := args.(string); isRaw && raw != "" && json.Valid([]byte(raw)) && !strings.HasPrefix(strings.TrimSpace(raw), `"`) {
			t.Fatalf("ParseArguments(%q) kept valid non-string JSON raw: %q", raw, s)
		}
		res := reg.Execute(context.Background(), core.Call{CallID: "c", Name: "note", RawArguments: raw})
		p := res.Projection()
		if len(p.Content) == 0 {
			t.Fatalf("Execute(%q) produced no content", raw)
		}
		obj, isObj := args.(map[string]any)
		title, isStr := obj["title"].(string)
		valid := isObj && isStr && core.IsLossless(args)
		if valid == res.IsError() {
			t.Fatalf("Execute(%q) isError = %v, but arguments valid = %v (%s)", raw, res.IsError(), valid, p.Content.PlainText())
		}
		if valid {
			want := "# " + title + "\n- line one\n- line two"
			if got := p.Content.PlainText(); got != want {
				t.Fatalf("Execute(%q) content = %q, want %q", raw, got, want)
			}
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result of %q does not marshal: %v", raw, err)
		}
	})
}

// FuzzCheckJSON checks that the byte-level lossless check agrees with
// decoding into a tree and checking that, and that Snapshot's output is
// always accepted again.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`0`, `-0`, `-0.0e5`, `1e400`, `-1e-400`, `1e-400`, `{"a":[1,2.5,-3e2]}`, `"-0"`,
		`{"s":"\"-0\""}`, `[1,2`, `nul`, `12345678901234567890123`, ` { "a" : -0 } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := core.CheckJSON(data)
		var tree any
		treeOK := json.Valid(data) && json.Unmarshal(data, &tree) == nil && core.IsLossless(tree)
		if (err == nil) != treeOK {
			t.Fatalf("CheckJSON(%q) = %v, but the decoded tree lossless = %v", data, err, treeOK)
		}
		if err != nil {
			return
		}
		snap, err := core.Snapshot(json.RawMessage(data))
		if err != nil {
			t.Fatalf("Snapshot(%q) refused text CheckJSON accepted: %v", data, err)
		}
		if err := core.CheckJSON(snap); err != nil {
			t.Fatalf("Snapshot(%q) = %q, which CheckJSON refuses: %v", data, snap, err)
		}
		again, err := core.Snapshot(tree)
		if err != nil {
			t.Fatalf("Snapshot(tree of %q) failed: %v", data, err)
		}
		var a, b any
		_ = json.Unmarshal(snap, &a)
		_ = json.Unmarshal(again, &b)
		if !jsonEqual(a, b) {
			t.Fatalf("Snapshot of text %q and of its tree differ: %s vs %s", data, snap, again)
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// FuzzContentDecode: Content's one-pass decoder gives exactly what
// decoding block by block with DecodeBlock gives, errors included.
func FuzzContentDecode(f *testing.F) {
	for _, s := range []string{`[]`, `null`, `[{"type":"text","text":"a"}]`,
		`[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"x"}],"isError":true}]`,
		`[{"type":"tool-result","toolCallId":"c","content":null}]`, `[{"type":"tool-result","toolCallId":"c"}]`,
		`[{"type":"text","text":"a","isError":"no"}]`, `[{"type":"image","attachment":{"attachmentId":"i","width":3}}]`,
		`[{"type":"tool-call","id":"1","name":"n","arguments":"{}"},{"type":"future","x":1}]`, `[{"TYPE":"text","Text":"a"}]`,
		`[{"type":"text","text":"a","content":[{"type":"nope"}]}]`, `[{"text":"a"}]`, `[{"type":null}]`, `[1]`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got core.Content
		gotErr := json.Unmarshal(data, &got)
		var want core.Content
		var wantErr error
		var raws []json.RawMessage
		if wantErr = json.Unmarshal(data, &raws); wantErr == nil {
			want = make(core.Content, 0, len(raws))
			for _, raw := range raws {
				b, err := core.DecodeBlock(raw)
				if err != nil {
					wantErr = err
					break
				}
				want = append(want, b)
			}
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: one-pass error %v, block by block %v", data, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: one pass %#v, block by block %#v", data, got, want)
		}
	})
}
