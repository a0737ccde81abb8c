package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"prism/core"
	"prism/mcp"
)

// mcpFlags are the MCP servers whose tools serve and exec register:
//
//	--mcp 'NAME=COMMAND ARG…'   a server run over stdio (words split as a shell would, no shell)
//	--mcp 'NAME=https://…'      a streamable HTTP server
//	PRISM_MCP                   more of the same, one per line
//	--mcp-timeout D             PRISM_MCP_TIMEOUT  the deadline of one MCP tool call
type mcpFlags struct {
	specs   stringList
	timeout time.Duration
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, "\n") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func addMCPFlags(fs *flag.FlagSet) *mcpFlags {
	f := &mcpFlags{}
	fs.Var(&f.specs, "mcp", "an MCP server whose tools the agent may call, as mcp__NAME__TOOL: 'NAME=COMMAND ARG…' (stdio; quotes honoured, no shell) or 'NAME=https://…' (streamable HTTP); repeatable; env PRISM_MCP holds more, one per line")
	def := mcp.DefaultCallTimeout
	if d, err := time.ParseDuration(os.Getenv("PRISM_MCP_TIMEOUT")); err == nil && d > 0 {
		def = d
	}
	fs.DurationVar(&f.timeout, "mcp-timeout", def, "deadline of one MCP tool call; a call past it fails with TOOL_TIMEOUT (env PRISM_MCP_TIMEOUT)")
	return f
}

// configs returns the configured servers: the flags, then PRISM_MCP.
func (f *mcpFlags) configs() ([]mcp.Config, error) {
	if f.timeout <= 0 {
		return nil, fmt.Errorf("%w: --mcp-timeout must be positive, got %s", errUsage, f.timeout)
	}
	cfgs, err := mcp.ParseSpecs(f.specs, os.Getenv("PRISM_MCP"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return cfgs, nil
}

// open connects every configured server and returns their tools and a
// function that closes them. With no server configured it returns nothing
// and a no-op.
func (f *mcpFlags) open(ctx context.Context, logger *slog.Logger) ([]*core.Tool, func(), error) {
	cfgs, err := f.configs()
	if err != nil || len(cfgs) == 0 {
		return nil, func() {}, err
	}
	set, err := mcp.Open(ctx, cfgs, mcp.Options{CallTimeout: f.timeout, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	return set.Tools(), func() { _ = set.Close() }, nil
}
