package core_test

import (
	"context"
	"testing"

	"prism/core"
	"prism/core/tools"
)

// TestPure: a definition's Pure flag is the tool's (typed and raw), off
// unless declared; prism's note tool declares it, the file tools do not.
func TestPure(t *testing.T) {
	for _, pure := range []bool{false, true} {
		d := tools.NoteDefinition()
		d.Name, d.Pure = "typed", pure
		typed, err := core.Define(d)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := core.DefineRaw(core.RawDefinition{Name: "raw", Output: echoOutput(), Pure: pure,
			Execute: func(context.Context, any, *core.Run) (any, error) { return map[string]any{"got": "x"}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if typed.Pure() != pure || raw.Pure() != pure {
			t.Errorf("declared %v: typed %v, raw %v", pure, typed.Pure(), raw.Pure())
		}
	}
	list, err := tools.Builtins(tools.Options{AllowBash: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list {
		if want := tool.Name() == "note"; tool.Pure() != want {
			t.Errorf("%s: Pure() = %v, want %v", tool.Name(), tool.Pure(), want)
		}
	}
}
