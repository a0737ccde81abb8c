package mcp_test

import (
	"testing"

	"prism/core"
	"prism/mcp"
)

// TestStandin: a stand-in draws the same cards as the server's own tool —
// the call titled as the server titles it, the image card of a chart —
// from the same logged call and result, and runs nothing: every call
// fails with MCP_UNAVAILABLE. A name that is not an MCP tool's is refused.
func TestStandin(t *testing.T) {
	_, reg := connect(t, mcp.Options{})
	calls := []struct{ name, title, args string }{
		{"mcp__test__echo", "Echo text", `{"text":"hi"}`},
		{"mcp__test__render_chart", "", `{}`},
	}
	for _, c := range calls {
		res := execute(reg, c.name, c.args).Projection()
		standin, err := mcp.Standin(c.name, c.title, mcp.Presenter{})
		if err != nil {
			t.Fatal(err)
		}
		stand := core.NewRegistry(nil)
		stand.MustRegister(standin)
		if got, want := mustJSON(stand.PresentCall(c.name, c.args)), mustJSON(reg.PresentCall(c.name, c.args)); got != want {
			t.Errorf("%s: the stand-in's call view %s, the tool's %s", c.name, got, want)
		}
		if got, want := mustJSON(stand.PresentResult(c.name, c.args, res)), mustJSON(reg.PresentResult(c.name, c.args, res)); got != want {
			t.Errorf("%s: the stand-in's result view %s, the tool's %s", c.name, got, want)
		}
		if c.name == "mcp__test__render_chart" && reg.PresentResult(c.name, c.args, res).Card() != core.CardImage {
			t.Errorf("%s: the chart's card is %s, want the image card", c.name, reg.PresentResult(c.name, c.args, res).Card())
		}
		f := failure(t, execute(stand, c.name, c.args))
		if f.Error.Info == nil || f.Error.Info.Code != mcp.CodeUnavailable {
			t.Errorf("%s: the stand-in's call failed with %s", c.name, mustJSON(f.Error.Info))
		}
	}
	if _, err := mcp.Standin("echo", "", mcp.Presenter{}); err == nil {
		t.Error("a stand-in of a name that is not an MCP tool's was made")
	}
}
