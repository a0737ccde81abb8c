package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/tools"
)

// env is one test workspace with its registry.
type env struct {
	t   *testing.T
	ws  string // the workspace root as configured
	reg *core.Registry
}

// newEnv builds a registry of the built-in tools over a fresh workspace.
func newEnv(t *testing.T, opts tools.Options) *env {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	list, err := tools.Builtins(opts)
	if err != nil {
		t.Fatalf("Builtins: %v", err)
	}
	reg := core.NewRegistry(nil)
	if err := reg.Register(list...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return &env{t: t, ws: opts.Workspace, reg: reg}
}

// path is an absolute path inside the workspace.
func (e *env) path(rel string) string { return filepath.Join(e.ws, rel) }

// write creates a workspace file (and its directories).
func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := e.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// read returns a workspace file's content.
func (e *env) read(rel string) string {
	e.t.Helper()
	data, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

// outcome is one call through the whole pipeline and both presenters.
type outcome struct {
	res  core.Result
	proj core.ToolResult
	raw  string
	call core.CallView
	view core.ResultView
}

// call runs a tool call through Registry.Execute and presents it from its
// logged arguments and durable result, as live streaming and replay do.
func (e *env) call(name string, args any) outcome {
	e.t.Helper()
	return e.callCtx(context.Background(), name, args)
}

func (e *env) callCtx(ctx context.Context, name string, args any) outcome {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	res := e.reg.Execute(ctx, core.Call{CallID: "call-1", Name: name, RawArguments: string(raw)})
	proj := res.Projection()
	return outcome{
		res:  res,
		proj: proj,
		raw:  string(raw),
		call: e.reg.PresentCall(name, string(raw)),
		view: e.reg.PresentResult(name, string(raw), proj),
	}
}

// text is the result's single text block.
func (o outcome) text(t *testing.T) string {
	t.Helper()
	if len(o.proj.Content) != 1 {
		t.Fatalf("content has %d blocks, want 1: %v", len(o.proj.Content), o.proj.Content)
	}
	tb, ok := o.proj.Content[0].(*core.TextBlock)
	if !ok {
		t.Fatalf("content[0] is %T", o.proj.Content[0])
	}
	return tb.Text
}

// ok asserts a success and returns its text.
func (o outcome) ok(t *testing.T) string {
	t.Helper()
	if o.res.IsError() {
		t.Fatalf("call failed: %s", o.text(t))
	}
	return o.text(t)
}

// fails asserts a failure with the given message and identity (nil info for
// an uncoded failure).
func (o outcome) fails(t *testing.T, message string, info *core.ErrorInfo) {
	t.Helper()
	f, isFailure := o.res.(*core.Failure)
	if !isFailure {
		t.Fatalf("call succeeded: %s", o.text(t))
	}
	if f.Error.Message != message {
		t.Errorf("message:\n got %q\nwant %q", f.Error.Message, message)
	}
	if got := o.text(t); got != "Error: "+message {
		t.Errorf("content %q, want the Error: envelope", got)
	}
	if diff := cmp.Diff(info, f.Error.Info); diff != "" {
		t.Errorf("error info (-want +got):\n%s", diff)
	}
}

// value decodes the success value into v.
func (o outcome) value(t *testing.T, v any) {
	t.Helper()
	s, ok := o.res.(*core.Success)
	if !ok {
		t.Fatalf("not a success: %s", o.text(t))
	}
	if err := json.Unmarshal(s.Value, v); err != nil {
		t.Fatalf("value: %v", err)
	}
}

// jsonEq compares v's JSON encoding with want, ignoring key order and
// whitespace.
func jsonEq(t *testing.T, what string, v any, want string) {
	t.Helper()
	var gotData []byte
	switch x := v.(type) {
	case json.RawMessage:
		gotData = x
	default:
		var err error
		if gotData, err = json.Marshal(v); err != nil {
			t.Fatalf("%s: marshal: %v", what, err)
		}
	}
	var got, exp any
	if err := json.Unmarshal(gotData, &got); err != nil {
		t.Fatalf("%s: got invalid JSON %s: %v", what, gotData, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("%s: want invalid JSON %s: %v", what, want, err)
	}
	if diff := cmp.Diff(exp, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s\ngot: %s", what, diff, gotData)
	}
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

func fsErr(code string) *core.ErrorInfo { return &core.ErrorInfo{Name: "FsError", Code: code} }

func searchErr(code string) *core.ErrorInfo { return &core.ErrorInfo{Name: "SearchError", Code: code} }

// numbered returns n lines "<prefix>1" … "<prefix>n", each ending in "\n".
func numbered(prefix string, n int) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		sb.WriteString(prefix)
		sb.WriteString(itoa(i))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func itoa(i int) string { return strconv.Itoa(i) }
