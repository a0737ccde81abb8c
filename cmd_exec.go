package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"prism/core"
	"prism/core/tools"
)

// execOutput is every projection of one call, as `prism exec` prints it.
type execOutput struct {
	Tool       string          `json:"tool"`
	CallID     string          `json:"callId"`
	Arguments  string          `json:"arguments"`
	IsError    bool            `json:"isError"`
	Value      json.RawMessage `json:"value,omitempty"`
	Content    core.Content    `json:"content"`
	Meta       json.RawMessage `json:"meta,omitempty"`
	Error      *execError      `json:"error,omitempty"`
	Contexts   []core.Message  `json:"additionalContexts,omitempty"`
	Concludes  bool            `json:"concludesTurn,omitempty"`
	CallView   core.CallView   `json:"callView"`
	ResultView core.ResultView `json:"resultView"`
}

type execError struct {
	Name    string `json:"name,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// runExec runs one call of a registered tool through the whole pipeline and
// prints one JSON object with every projection. A failed call (an unknown
// tool included) exits with status 1 after printing.
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: prism exec [--indent] [--workspace DIR] [--mcp 'NAME=COMMAND ARG…']… TOOL 'RAW-ARGS'")
		fs.PrintDefaults()
	}
	indent := fs.Bool("indent", false, "indent the JSON output")
	workspace := fs.String("workspace", envOr("PRISM_WORKSPACE", "."), "workspace root for file tools (env PRISM_WORKSPACE)")
	allowBash := fs.Bool("allow-bash", envBool("PRISM_ALLOW_BASH"), "register the bash tool (env PRISM_ALLOW_BASH=1)")
	mcpServers := addMCPFlags(fs)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("%w: want TOOL and optionally RAW-ARGS", errUsage)
	}
	name, raw := fs.Arg(0), ""
	if fs.NArg() == 2 {
		raw = fs.Arg(1)
	}
	reg := core.NewRegistry(nil)
	ws, err := filepath.Abs(*workspace)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	builtins, err := tools.Builtins(tools.Options{Workspace: ws, AllowBash: *allowBash})
	if err != nil {
		return err
	}
	mcpTools, closeMCP, err := mcpServers.open(ctx, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer closeMCP()
	if err := reg.Register(append(builtins, mcpTools...)...); err != nil {
		return err
	}
	call := core.Call{CallID: "exec-" + core.NewID(), Name: name, RawArguments: raw, Cwd: ws}
	res := reg.Execute(ctx, call)
	out := execOutput{
		Tool:       name,
		CallID:     call.CallID,
		Arguments:  raw,
		IsError:    res.IsError(),
		Contexts:   res.Contexts(),
		CallView:   reg.PresentCall(name, raw),
		ResultView: reg.PresentResult(name, raw, res.Projection()),
	}
	switch r := res.(type) {
	case *core.Success:
		out.Value, out.Content, out.Meta, out.Concludes = r.Value, r.Content, r.Meta, r.ConcludesTurn
	case *core.Failure:
		out.Content, out.Meta = r.Content, r.Meta
		out.Error = &execError{Message: r.Error.Message}
		if r.Error.Info != nil {
			out.Error.Name, out.Error.Code = r.Error.Info.Name, r.Error.Info.Code
		}
	}
	data, err := core.MarshalNoEscape(out)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if *indent {
		var buf bytes.Buffer
		_ = json.Indent(&buf, data, "", "  ")
		data = buf.Bytes()
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", data); err != nil {
		return err
	}
	if res.IsError() {
		return exitError{1}
	}
	return nil
}
