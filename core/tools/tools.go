package tools

import (
	"fmt"
	"path/filepath"
	"time"

	"prism/core"
)

// Options configures the built-in tools.
type Options struct {
	// Workspace is the directory every file tool and bash is confined to.
	// Empty means each call's session cwd (core.Run.Cwd, which must be an
	// absolute path) is its workspace, so one registry can serve sessions
	// with different workspaces; a call without a cwd is then refused.
	Workspace string
	// AllowBash registers the bash tool. It is off by default: bash runs
	// arbitrary commands with the server's authority (minus credential-shaped
	// environment variables) and is confined only by its working directory.
	AllowBash bool
	// BashKillGrace is the time between SIGTERM and SIGKILL when a command
	// times out or is cancelled (0 = BashDefaultKillGrace).
	BashKillGrace time.Duration
}

// workspaceSource yields the workspace of one call.
type workspaceSource func(run *core.Run) (*workspace, error)

// Builtins returns prism's built-in tools with dsh's names, argument shapes,
// model-facing texts, meta and presenters: read, write, edit, grep, glob,
// bash (only with AllowBash) and the seed's note. A Workspace that is not an
// existing directory is an error.
func Builtins(opts Options) ([]*core.Tool, error) {
	var ws workspaceSource
	if opts.Workspace != "" {
		w, err := newWorkspace(opts.Workspace)
		if err != nil {
			return nil, fmt.Errorf("builtin tools: %w", err)
		}
		ws = func(*core.Run) (*workspace, error) { return w, nil }
	} else {
		ws = sessionWorkspace
	}
	grace := opts.BashKillGrace
	if grace <= 0 {
		grace = BashDefaultKillGrace
	}
	list := []*core.Tool{
		core.MustDefine(readDefinition(ws)),
		core.MustDefine(writeDefinition(ws)),
		core.MustDefine(editDefinition(ws)),
		core.MustDefine(grepDefinition(ws)),
		core.MustDefine(globDefinition(ws)),
	}
	if opts.AllowBash {
		list = append(list, core.MustDefine(bashDefinition(ws, grace)))
	}
	return append(list, NewNote()), nil
}

// sessionWorkspace uses the calling session's cwd as the workspace.
func sessionWorkspace(run *core.Run) (*workspace, error) {
	if run == nil || run.Cwd == "" {
		return nil, core.Errorf(core.CodeUnavailable, "no workspace: the call has no session cwd to confine file access to")
	}
	if !filepath.IsAbs(run.Cwd) {
		return nil, core.Errorf(core.CodeUnavailable, "no workspace: the session cwd %q is not an absolute path", run.Cwd)
	}
	w, err := newWorkspace(run.Cwd)
	if err != nil {
		return nil, core.Errorf(core.CodeUnavailable, "no workspace: %v", err)
	}
	return w, nil
}
