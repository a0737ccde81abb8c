package tools

import (
	"encoding/json"
	"regexp"
	"testing"

	"prism/core"
)

// FuzzPresenters feeds arbitrary meta and result text to every presenter
// directly — without the registry's panic recovery — and checks that each
// one returns nil or a view that marshals, never panicking (the registry
// then validates the view and falls back to the generic card).
func FuzzPresenters(f *testing.F) {
	seeds := []string{
		``, `null`, `[]`, `"x"`, `1e400`, `{}`,
		`{"diffs":[{"path":"a","oldText":null,"newText":"b"}]}`,
		`{"diffs":[{"path":"","oldText":1,"newText":null}]}`,
		`{"path":"/a","offset":1,"lines":[{"number":1,"text":"x"}],"totalLines":1,"lang":"go"}`,
		`{"path":"/a","offset":1e308,"lines":[{"number":-1,"text":"x"}],"totalLines":1e308}`,
		`{"shape":"matches","files":[{"path":"a","matches":[{"lineNumber":1e300,"line":"x"}]}],"truncated":true,"total":1}`,
		`{"shape":"paths","paths":["a",null],"truncated":false,"total":2}`,
	}
	texts := []string{
		"", "x\n[exit code: 7]", "x\n[killed by signal: SIGINT]", "\n[exit code: 99999999999999999999]",
		"<path>/a</path>\n<type>file</type>\n<content>\n1: x\n\n(End of file - total 1 lines)\n</content>",
	}
	for _, m := range seeds {
		for _, tx := range texts {
			f.Add([]byte(m), tx, false)
		}
	}
	read := readDefinition(nil)
	write := writeDefinition(nil)
	edit := editDefinition(nil)
	grep := grepDefinition(nil)
	glob := globDefinition(nil)
	bash := bashDefinition(nil, 0)
	f.Fuzz(func(t *testing.T, meta []byte, text string, isError bool) {
		r := core.ToolResult{Content: core.Text(text), IsError: isError}
		if json.Valid(meta) {
			r.Meta = meta
		}
		one, path := 1.0, "a.go"
		views := []core.ResultView{
			read.PresentResult(ReadArgs{FilePath: path, Offset: &one}, r),
			write.PresentResult(WriteArgs{FilePath: path, Content: text}, r),
			edit.PresentResult(EditArgs{FilePath: path, OldString: "a", NewString: "b"}, r),
			grep.PresentResult(GrepArgs{Pattern: "x", Path: &path}, r),
			glob.PresentResult(GlobArgs{Pattern: "*"}, r),
			bash.PresentResult(BashArgs{Command: "ls", Description: "List"}, r),
		}
		for i, v := range views {
			if v == nil {
				continue
			}
			if _, err := json.Marshal(v); err != nil {
				t.Errorf("view %d does not marshal: %v", i, err)
			}
		}
	})
}

// FuzzReadEnvelopeBody: the string search finds exactly what dsh's
// envelope regexp captures.
func FuzzReadEnvelopeBody(f *testing.F) {
	for _, s := range []string{
		"<path>/a</path>\n<type>file</type>\n<content>\n1: x\n</content>",
		"<path>/a</path>\n<type>file</type>\n<content>\n\n</content>",
		"<path>/a</path>\n<type>file</type>\n<content>\n</content>",
		"<path></path>\n<type>file</type>\n<content>\na\n</content>\n</content>",
		"<path>x</path></path>\n<type>file</type>\n<content>\nb\n</content>",
		"<path>x\n</path>\n<type>file</type>\n<content>\nb\n</content>",
		"<path>/a</path>\n<type>file</type>\n<content>\n1: x\n</content>\n", "", "<path>",
	} {
		f.Add(s)
	}
	envelope := regexp.MustCompile(`^<path>[^\n]*</path>\n<type>file</type>\n<content>\n((?s:.*))\n</content>$`)
	f.Fuzz(func(t *testing.T, text string) {
		body, ok := readEnvelopeBody(text)
		m := envelope.FindStringSubmatch(text)
		if ok != (m != nil) || ok && body != m[1] {
			t.Fatalf("%q: search (%q, %t), regexp %q", text, body, ok, m)
		}
	})
}
