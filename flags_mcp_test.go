package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"prism/mcp/mcptest"
)

func mcpSpec(t *testing.T, name string) string {
	t.Helper()
	spec, err := mcptest.Spec(name)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestExecMCP runs one MCP call from the terminal and checks every
// projection printed: the image reference in the content, the thumbnail in
// the meta, the image card; and a failing call's identity and exit status.
func TestExecMCP(t *testing.T) {
	t.Setenv("PRISM_MCP", "")
	var out, errOut bytes.Buffer
	err := runExec(context.Background(), []string{"--mcp", mcpSpec(t, "charts"), "mcp__charts__render_chart", `{}`}, &out, &errOut)
	if err != nil {
		t.Fatalf("exec: %v\n%s", err, errOut.String())
	}
	var got struct {
		IsError bool              `json:"isError"`
		Value   map[string]any    `json:"value"`
		Content []json.RawMessage `json:"content"`
		Meta    struct {
			Server string `json:"server"`
			Images []struct {
				MediaType string `json:"mediaType"`
				Width     int    `json:"width"`
			} `json:"images"`
		} `json:"meta"`
		CallView   map[string]any `json:"callView"`
		ResultView map[string]any `json:"resultView"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %s: %v", out.String(), err)
	}
	if got.IsError || len(got.Content) != 2 || !strings.Contains(string(got.Content[1]), `"type":"image"`) {
		t.Errorf("content = %s", got.Content)
	}
	if _, ok := got.Value["content"]; !ok {
		t.Errorf("value = %v, want dsh's {content}", got.Value)
	}
	if got.Meta.Server != "charts" || len(got.Meta.Images) != 1 || got.Meta.Images[0].Width != 320 {
		t.Errorf("meta = %+v", got.Meta)
	}
	if got.ResultView["card"] != "image" || got.CallView["card"] != "generic" {
		t.Errorf("views = %v / %v", got.CallView["card"], got.ResultView["card"])
	}

	// The same server from PRISM_MCP, and a failing tool: exit status 1 with
	// the failure's identity printed.
	t.Setenv("PRISM_MCP", "# comment\n\n"+mcpSpec(t, "env"))
	out.Reset()
	err = runExec(context.Background(), []string{"mcp__env__fail", `{}`}, &out, &errOut)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("exec of a failing tool = %v, want exit status 1", err)
	}
	if !strings.Contains(out.String(), `"content":[{"type":"text","text":"Error: disk on fire"}]`) ||
		!strings.Contains(out.String(), `"name":"McpToolError","code":"MCP_TOOL_ERROR"`) {
		t.Errorf("output = %s", out.String())
	}
}

func TestMCPFlagErrors(t *testing.T) {
	t.Setenv("PRISM_MCP", "")
	for _, args := range [][]string{
		{"--mcp", "bad name=ls"},
		{"--mcp", "a=ls", "--mcp", "a=ls"},
		{"--mcp", `a=ls "unterminated`},
		{"--mcp-timeout", "-1s"},
	} {
		var errOut bytes.Buffer
		_, err := parseServeFlags(args, &errOut)
		if !errors.Is(err, errUsage) {
			t.Errorf("serve %q = %v, want a usage error", args, err)
		}
	}
}
