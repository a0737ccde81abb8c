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

// spec is the --mcp value that runs this test binary as the server.
func spec(t testing.TB, name string) string {
	t.Helper()
	s, err := mcptest.Spec(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
