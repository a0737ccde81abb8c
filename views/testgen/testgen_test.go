package testgen_test

import (
	"context"
	"go/format"
	"strings"
	"testing"

	"prism/core"
	"prism/views/testgen"
)

// TestTestSource: the test file is gofmt-clean Go for every kind of call —
// a built-in (registered by prismtest.Builtins), a pure built-in (rerun),
// a user's tool (the one marked line, the pure check at run time), a
// result-only card and an interrupted call (never rerun).
func TestTestSource(t *testing.T) {
	base := testgen.Recording{Version: testgen.Version, Session: "s", CallID: "call-1", Logged: true, Arguments: `{}`}
	tests := []struct {
		name      string
		tool      string
		mutate    func(*testgen.Recording)
		has, hasn []string
	}{
		{"read", "read", nil, []string{"prismtest.Builtins(t)", "func TestRecordedReadCall_1(t *testing.T)"}, []string{"Rerun", "TODO", `"prism/core"`}},
		{"note", "note", nil, []string{"prismtest.Builtins(t)", "prismtest.Rerun(t, reg, rec)"}, []string{"TODO"}},
		{"user tool", "greet", nil, []string{testgen.TODOMarker, `prismtest.RequireTool(t, reg, rec, "greet_call_1_test.go")`, "tool.Pure()", `"prism/core"`}, []string{"Builtins"}},
		{"mcp", "mcp__files__read_file", func(r *testgen.Recording) {}, []string{`"prism/mcp"`, `mcp.Standin(rec.Tool, "", mcp.Presenter{})`},
			[]string{"TODO", "Rerun", "Builtins"}},
		{"result only", "note", func(r *testgen.Recording) { r.Logged = false }, []string{"result only"}, []string{"Rerun"}},
		{"interrupted", "greet", func(r *testgen.Recording) {
			r.Result.IsError, r.Error = true, &core.ErrorInfo{Name: "AbortError", Code: core.CodeAborted}
		}, []string{"failed: ABORTED", testgen.TODOMarker}, []string{"Rerun"}},
	}
	for _, tt := range tests {
		r := base
		r.Tool = tt.tool
		if tt.mutate != nil {
			tt.mutate(&r)
		}
		src, err := testgen.TestSource(r, testgen.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if formatted, err := format.Source(src); err != nil || string(formatted) != string(src) {
			t.Errorf("%s: the source is not gofmt-clean (%v):\n%s", tt.name, err, src)
		}
		for _, s := range tt.has {
			if !strings.Contains(string(src), s) {
				t.Errorf("%s: the source lacks %q:\n%s", tt.name, s, src)
			}
		}
		for _, s := range tt.hasn {
			if strings.Contains(string(src), s) {
				t.Errorf("%s: the source has %q:\n%s", tt.name, s, src)
			}
		}
	}
}

// TestRecordingRoundTrip: a recording decodes to what was encoded, content
// blocks, meta and error identity included; a file of another version or
// without a tool is refused.
func TestRecordingRoundTrip(t *testing.T) {
	r := testgen.Recording{Version: testgen.Version, Session: "s", CallID: "c", Tool: "read", Arguments: `{"file_path":"a"}`,
		Logged: true, Cwd: "/w", CallTime: 5, ResultTime: 9, Error: &core.ErrorInfo{Name: "E", Code: "C"},
		Result: core.ToolResult{Content: core.Text("x\u2028<y>"), IsError: true, Meta: []byte(`{"n":1}`)}}
	data, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := testgen.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := got.Encode()
	if err != nil || string(again) != string(data) || got.Result.Content.PlainText() != "x\u2028<y>" || *got.Error != *r.Error {
		t.Errorf("round trip: %v\n%s\n%s", err, data, again)
	}
	for _, bad := range []string{`{"version":2,"tool":"read","callId":"c"}`, `{"version":1,"callId":"c"}`, `not json`} {
		if _, err := testgen.Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
}

// TestFirstDifference names the changed line with its enclosing elements.
func TestFirstDifference(t *testing.T) {
	want := "<article class=\"card st-ok\" data-testid=\"tool-card\">\n  <header class=\"card-head\">\n    <span class=\"title\">\n      \"Read a\"\n  <div class=\"card-body\">\n"
	got := strings.Replace(want, `"Read a"`, `"Read b"`, 1)
	if d := testgen.FirstDifference(want, got); d != `article[data-testid=tool-card] > header.card-head > span.title: golden "Read a", got "Read b"` {
		t.Errorf("FirstDifference = %q", d)
	}
	if d := testgen.FirstDifference(want, want); d != "" {
		t.Errorf("equal outlines: %q", d)
	}
	if d := testgen.FirstDifference(want, want+"  <p>\n"); !strings.Contains(d, "golden (nothing), got <p>") {
		t.Errorf("an added element: %q", d)
	}
}

// TestNames: file and package names are lower-case identifiers.
func TestNames(t *testing.T) {
	r := testgen.Recording{Tool: "mcp__files__Read-File", CallID: "call_c90599a4_12"}
	if n := testgen.DefaultName(r); n != "mcp_files_read_file_call_c90599a4_12" {
		t.Errorf("DefaultName = %q", n)
	}
	for in, want := range map[string]string{"my-pkg": "my_pkg", "9lives": "p9lives", "func": "func_", "": "call"} {
		if got := testgen.PackageName(in); got != want {
			t.Errorf("PackageName(%q) = %q, want %q", in, got, want)
		}
	}
}

// titled presents every call as a generic card with a title, as the MCP
// tool of a server that titles it does.
type titled struct{ title string }

func (p titled) PresentCall(_, args string) core.CallView {
	return &core.GenericCallView{Title: p.title, RawInput: args}
}

func (titled) PresentResult(_, _ string, res core.ToolResult) core.ResultView {
	return &core.GenericResultView{Content: res.Content}
}

// TestFiles: the three files under their paths, the MCP tool's title taken
// from the presenters into its stand-in, and the golden showing it.
func TestFiles(t *testing.T) {
	r := testgen.Recording{Version: testgen.Version, Session: "s", CallID: "c1", Tool: "mcp__files__read_file", Arguments: `{"path":"a"}`,
		Logged: true, CallTime: 1000, ResultTime: 1250, Result: core.ToolResult{Content: core.Text("alpha")}}
	files, err := testgen.Files(context.Background(), titled{"Read a file"}, r, testgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "mcp_files_read_file_c1_test.go testdata/mcp_files_read_file_c1.call.json testdata/mcp_files_read_file_c1.golden" {
		t.Fatalf("paths %v", paths)
	}
	if src := string(files[0].Data); !strings.Contains(src, `mcp.Standin(rec.Tool, "Read a file", mcp.Presenter{})`) {
		t.Errorf("the stand-in lacks the server's title:\n%s", src)
	}
	if g := string(files[2].Data); strings.Count(g, `"Read a file"`) != 2 || !strings.Contains(g, `"250 ms"`) {
		t.Errorf("the golden lacks the title in both cards or the duration:\n%s", g)
	}
}
