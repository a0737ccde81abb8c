package testgen

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"go/format"
	"go/token"
	"io"
	"path"
	"strings"
	"text/template"
	"time"
	"unicode"

	"prism/core"
	"prism/core/tools"
	"prism/views"
)

// TODOMarker is the comment of the generated line where a user's tool is
// registered; prismtest's failure message points to it.
const TODOMarker = "// TODO: register your tool here"

// File is one generated file: its path relative to the test's package
// directory, and its content.
type File struct {
	Path string
	Data []byte
}

// Options adjust the generated files.
type Options struct {
	// Name is the files' base name (testdata/NAME.call.json,
	// testdata/NAME.golden, NAME_test.go); "" is DefaultName.
	Name string
	// Package is the test file's package clause; "" is "recorded_test".
	Package string
	// MCPTitle is the server's title of an MCP tool (mcp__<server>__<tool>),
	// which its call card shows; Files takes it from the presenters.
	MCPTitle string
}

// DefaultName is a recording's default base name: the tool's and the
// call's names, lower case, with every run of other characters as '_'.
func DefaultName(r Recording) string {
	return sanitize(r.Tool + "_" + r.CallID)
}

// sanitize keeps ASCII letters and digits, lower case, and writes every
// run of anything else as one '_'.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, c := range strings.ToLower(s) {
		if c < unicode.MaxASCII && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
			b.WriteRune(c)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" {
		return "call"
	}
	return out
}

// PackageName makes a Go package name of s (a directory's name): sanitized,
// never starting with a digit.
func PackageName(s string) string {
	p := sanitize(s)
	if p[0] >= '0' && p[0] <= '9' {
		p = "p" + p
	}
	if token.IsKeyword(p) {
		p += "_"
	}
	return p
}

// builtin returns prism's built-in tool of this name (bash included).
func builtin(name string) (*core.Tool, bool) {
	list, err := tools.Builtins(tools.Options{AllowBash: true})
	if err != nil {
		return nil, false
	}
	for _, t := range list {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Files returns the generated files of a recording: the test file, the
// recording and the golden of its cards rendered with p's presenters (the
// server's: the cards as this build shows them).
func Files(ctx context.Context, p views.Presenter, r Recording, o Options) ([]File, error) {
	if o.Name == "" {
		o.Name = DefaultName(r)
	}
	if o.Package == "" {
		o.Package = "recorded_test"
	}
	if o.Name != sanitize(o.Name) {
		return nil, fmt.Errorf("testgen: the name %q is not lower-case letters, digits and single underscores", o.Name)
	}
	rec, err := r.Encode()
	if err != nil {
		return nil, err
	}
	pending, completed, err := Cards(ctx, p, r)
	if err != nil {
		return nil, err
	}
	golden, err := Golden(r.Tool, r.Arguments, r.Cwds(), pending, completed)
	if err != nil {
		return nil, err
	}
	if _, _, ok := core.SplitMCPName(r.Tool); ok && o.MCPTitle == "" {
		if v, ok := p.PresentCall(r.Tool, r.Arguments).(*core.GenericCallView); ok && v.Title != r.Tool {
			o.MCPTitle = v.Title
		}
	}
	src, err := TestSource(r, o)
	if err != nil {
		return nil, err
	}
	return []File{
		{Path: o.Name + "_test.go", Data: src},
		{Path: "testdata/" + o.Name + ".call.json", Data: rec},
		{Path: "testdata/" + o.Name + ".golden", Data: []byte(golden)},
	}, nil
}

// testData is what the test file's template reads.
type testData struct {
	Recording
	Package, Name, Func, File string
	Builtin, Pure             bool
	// MCP: an MCP server's tool, drawn by a stand-in (mcp.Standin).
	MCP      bool
	MCPTitle string
	// Rerun: the recorded result can be the body's (Recording.FromBody).
	Rerun  bool
	Status string
	Marker string
}

var testTemplate = template.Must(template.New("test").Parse(`// Saved as a test by prism from session {{printf "%q" .Session}}, call {{printf "%q" .CallID}} ({{.Tool}}).
// go test -update rewrites the golden from this build's cards; read it
// before committing it.

package {{.Package}}

import (
	"testing"
{{if not .Builtin}}
	"prism/core"{{end}}{{if .MCP}}
	"prism/mcp"{{end}}
	"prism/prismtest"
)

// {{.Func}} checks the cards of a recorded {{.Tool}} call ({{.Status}}):
// the recorded arguments and result go through the tool's presenters
// (PresentCall, PresentResult) as on replay, and both cards must equal
// testdata/{{.Name}}.golden.{{if .Rerun}}{{if .Builtin}}{{if .Pure}} {{.Tool}} is pure, so the call
// also runs again through the real pipeline and must give the recorded
// isError, content and meta.{{end}}{{else}} A tool declared pure
// (core.Definition.Pure) also runs the call again through the real
// pipeline and must give the recorded isError, content and meta.{{end}}{{end}}
func {{.Func}}(t *testing.T) {
	rec := prismtest.LoadRecording(t, "testdata/{{.Name}}.call.json")
{{- if .Builtin}}
	reg := prismtest.Builtins(t) // {{.Tool}} is one of prism's built-in tools
{{- else if .MCP}}
	// An MCP server's tool: a stand-in draws its cards with MCP's own
	// presenters; nothing runs, no server is needed.
	tool, err := mcp.Standin(rec.Tool, {{printf "%q" .MCPTitle}}, mcp.Presenter{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(tool)
{{- else}}
	reg := core.NewRegistry(nil)
	{{.Marker}}, e.g. reg.MustRegister(yourtool.New())
	prismtest.RequireTool(t, reg, rec, "{{.File}}")
{{- end}}

	c := prismtest.Present(t, reg, rec)
	c.Golden(t, "testdata/{{.Name}}.golden")
{{- if .Rerun}}{{if .Builtin}}{{if .Pure}}
	prismtest.Rerun(t, reg, rec)
{{- end}}{{else}}
	if tool, ok := reg.Get(rec.Tool); ok && tool.Pure() {
		prismtest.Rerun(t, reg, rec)
	}
{{- end}}{{end}}
}
`))

// TestSource returns the gofmt-formatted test file of a recording.
func TestSource(r Recording, o Options) ([]byte, error) {
	if o.Name == "" {
		o.Name = DefaultName(r)
	}
	if o.Package == "" {
		o.Package = "recorded_test"
	}
	d := testData{Recording: r, Package: o.Package, Name: o.Name, File: o.Name + "_test.go", Marker: TODOMarker,
		Func: "TestRecorded" + camel(o.Name), Status: "ok"}
	if t, ok := builtin(r.Tool); ok {
		d.Builtin, d.Pure = true, t.Pure()
	}
	if _, _, ok := core.SplitMCPName(r.Tool); ok && !d.Builtin {
		d.MCP, d.MCPTitle = true, o.MCPTitle
	}
	d.Rerun = r.FromBody() && !d.MCP
	switch {
	case !r.Logged:
		d.Status = "result only: the call was never logged"
	case r.Error != nil:
		d.Status = "failed: " + r.Error.Code
	case r.Result.IsError:
		d.Status = "failed"
	}
	var b bytes.Buffer
	if err := testTemplate.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("testgen: write the test of call %q: %w", r.CallID, err)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("testgen: format the test of call %q: %w\n%s", r.CallID, err, b.Bytes())
	}
	return src, nil
}

// camel writes a sanitized name in CamelCase: read_call_1 → ReadCall_1
// (an underscore stays between digits and what follows).
func camel(name string) string {
	var b strings.Builder
	for i, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		if i > 0 && b.Len() > 0 && (isDigit(part[0]) || isDigit(b.String()[b.Len()-1])) {
			b.WriteByte('_')
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// WriteZip writes files into a zip under the directory dir (the test's
// package directory once unzipped), with the time of each entry fixed
// (mod), so the same call gives the same bytes.
func WriteZip(w io.Writer, dir string, mod time.Time, files []File) error {
	z := zip.NewWriter(w)
	for _, f := range files {
		h := &zip.FileHeader{Name: path.Join(dir, f.Path), Method: zip.Deflate, Modified: mod.UTC()}
		h.SetMode(0o644)
		fw, err := z.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("testgen: zip %s: %w", f.Path, err)
		}
		if _, err := fw.Write(f.Data); err != nil {
			return fmt.Errorf("testgen: zip %s: %w", f.Path, err)
		}
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("testgen: zip: %w", err)
	}
	return nil
}
