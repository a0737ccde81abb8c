package prismtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/aymanbagabas/go-udiff"

	"prism/core"
	"prism/core/tools"
	"prism/views/testgen"
)

// Recording is a call recorded by prism ("save as test", prism testgen):
// the raw arguments, the durable result (content, isError, meta) and the
// error identity, as testdata/NAME.call.json holds them.
type Recording = testgen.Recording

// LoadRecording reads a recording file written by prism testgen (or the
// call page's "save as test" button), failing t when it does not decode.
func LoadRecording(t testing.TB, path string) Recording {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("prismtest: read the recording: %v", err)
	}
	r, err := testgen.Decode(data)
	if err != nil {
		t.Fatalf("prismtest: %s: %v", path, err)
	}
	return r
}

// Builtins returns a registry of prism's built-in tools as prism registers
// them (bash included), whose presenters draw the built-ins' cards.
func Builtins(t testing.TB) *core.Registry {
	t.Helper()
	list, err := tools.Builtins(tools.Options{AllowBash: true})
	if err != nil {
		t.Fatalf("prismtest: the built-in tools: %v", err)
	}
	reg := core.NewRegistry(nil)
	if err := reg.Register(list...); err != nil {
		t.Fatalf("prismtest: register the built-in tools: %v", err)
	}
	return reg
}

// RequireTool fails t now unless reg has the recording's tool: a test
// generated for a tool prism does not know (a user's own) must register it
// on the line marked "TODO: register your tool here" of file first.
func RequireTool(t testing.TB, reg *core.Registry, r Recording, file string) {
	t.Helper()
	if _, ok := reg.Get(r.Tool); !ok {
		t.Fatalf("prismtest: tool %q is not registered: register it on the line marked %q in %s "+
			"(reg.MustRegister with your tool's *core.Tool), then run go test again",
			r.Tool, testgen.TODOMarker[len("// "):], file)
	}
}

// Present renders a recorded call's two cards with reg's presenters, as a
// replay of the recording renders them: the recorded arguments and result
// go through the tool's PresentCall and PresentResult and the page's own
// components draw the cards; nothing executes. The tool's body — its
// workspace, its server — is not needed, so the presenters of any tool are
// tested on what it once returned. The cards' session, call id, times and
// cwd are the recording's, and Golden writes the cwd as {cwd} (and its
// resolved form, as recorded: the same on every machine).
//
// A result-only recording (the call was never logged) has no pending card:
// Pending is empty and the golden says so.
func Present(t testing.TB, reg *core.Registry, r Recording) *CardResult {
	t.Helper()
	c := &CardResult{Tool: r.Tool, Args: r.Arguments, CallID: r.CallID, Cwd: r.Cwd, Result: r.Result, Error: r.Error, cwds: r.Cwds()}
	if reg == nil {
		t.Fatalf("prismtest.Present(%s): the registry is nil", c)
	}
	h, events, pendingEnd, err := r.Log()
	if err != nil {
		t.Fatalf("prismtest.Present(%s): %v", c, err)
	}
	c.Header, c.Events = h, events
	pending, completed, err := testgen.Cards(context.Background(), reg, r)
	if err != nil {
		t.Fatalf("prismtest.Present(%s): %v", c, err)
	}
	if pendingEnd > 0 {
		c.Pending = parsed(t, pending)
	} else {
		c.Pending = parsed(t, "")
	}
	c.Completed = parsed(t, completed)
	return c
}

// Rerun runs the recorded call again through reg's real pipeline (Card:
// one turn of the agent loop, in a fresh empty working directory) and
// fails t unless it gives the recorded result: isError, the content, the
// meta and the error identity. It is for pure tools (core.Definition.Pure),
// whose result depends on the arguments alone; it fails t for a tool that
// is not registered or not declared pure.
func Rerun(t testing.TB, reg *core.Registry, r Recording) *CardResult {
	t.Helper()
	tool, ok := reg.Get(r.Tool)
	if !ok {
		t.Fatalf("prismtest.Rerun: tool %q is not registered", r.Tool)
	}
	if !tool.Pure() {
		t.Fatalf("prismtest.Rerun: tool %q is not declared pure (core.Definition.Pure): its call may have side effects, so it is not run again", r.Tool)
	}
	c := Card(t, reg, r.Tool, r.Arguments, WithCallID(r.CallID))
	if c.Result.IsError != r.Result.IsError {
		t.Errorf("%s: run again, isError is %v; the recording has %v", c, c.Result.IsError, r.Result.IsError)
	}
	if got, want := errorText(c.Error), errorText(r.Error); got != want {
		t.Errorf("%s: run again, the error identity is %s; the recording has %s", c, got, want)
	}
	compareJSON(t, c, "content", c.Result.Content, r.Result.Content)
	compareJSON(t, c, "meta", c.Result.Meta, r.Result.Meta)
	return c
}

// errorText writes an error identity for a failure message.
func errorText(e *core.ErrorInfo) string {
	if e == nil {
		return "none"
	}
	return e.Name + " " + e.Code
}

// compareJSON compares a projection of the rerun call with the recorded
// one as indented JSON, failing t with a diff naming the field.
func compareJSON(t testing.TB, c *CardResult, field string, got, want any) {
	t.Helper()
	g, err := indentedJSON(got)
	if err != nil {
		t.Fatalf("%s: encode its %s: %v", c, field, err)
	}
	w, err := indentedJSON(want)
	if err != nil {
		t.Fatalf("%s: encode the recorded %s: %v", c, field, err)
	}
	if g != w {
		t.Errorf("%s: run again, its %s differs from the recording:\n%s", c, field, udiff.Unified("recorded "+field, "rerun "+field, w, g))
	}
}

// indentedJSON encodes v (raw JSON as is) indented, "null" for nothing.
func indentedJSON(v any) (string, error) {
	var data []byte
	switch x := v.(type) {
	case json.RawMessage:
		data = x
	default:
		var err error
		if data, err = core.MarshalNoEscape(v); err != nil {
			return "", err
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "null\n", nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return "", err
	}
	return b.String() + "\n", nil
}
