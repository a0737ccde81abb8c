package mcp_test

import (
	"os"
	"testing"

	"prism/mcp/mcptest"
)

// TestMain runs the test MCP server when the test binary is started as its
// child process, and the tests otherwise.
func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	os.Exit(m.Run())
}

// serverCommand is the command that runs this test binary as the server.
func serverCommand(t testing.TB) []string {
	t.Helper()
	cmd, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}
