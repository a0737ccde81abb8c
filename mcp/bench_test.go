package mcp_test

import (
	"context"
	"testing"

	"prism/core"
	"prism/core/tools"
	"prism/mcp"
)

// BenchmarkCall measures one tool call through the whole pipeline: an MCP
// tool over stdio (a round trip to the child server: JSON-RPC encode,
// pipe, the server's handler, decode, and prism's projections) beside the
// built-in note tool. The difference is the per-call overhead of MCP.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	b.Run("builtin=note", func(b *testing.B) {
		reg := core.NewRegistry(nil)
		reg.MustRegister(tools.NewNote())
		call := core.Call{CallID: "c", Name: "note", RawArguments: `{"title":"Demo"}`}
		b.ReportAllocs()
		for b.Loop() {
			if r := reg.Execute(ctx, call); r.IsError() {
				b.Fatal(r)
			}
		}
	})
	b.Run("mcp=stdio/echo", func(b *testing.B) {
		cfg, err := mcp.ParseSpec(spec(b, "test"))
		if err != nil {
			b.Fatal(err)
		}
		srv, err := mcp.Connect(ctx, cfg, mcp.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		reg := core.NewRegistry(nil)
		reg.MustRegister(srv.Tools()...)
		call := core.Call{CallID: "c", Name: "mcp__test__echo", RawArguments: `{"text":"Demo"}`}
		b.ReportAllocs()
		for b.Loop() {
			if r := reg.Execute(ctx, call); r.IsError() {
				b.Fatal(r)
			}
		}
	})
}
