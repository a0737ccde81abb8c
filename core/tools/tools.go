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

// Where these tools knowingly differ from dsh's:
//
//   - grep and glob walk the workspace in Go instead of spawning ripgrep:
//     patterns are Go (RE2) regular expressions, close to ripgrep's default
//     engine; grep skips hidden and binary files but reads no .gitignore;
//     symbolic links are never followed; results come in lexical path order
//     (glob: oldest modification first); error texts cannot quote rg.
//   - prism has no spill store: a capped grep or glob result carries dsh's
//     "could not be saved" footer and a truncated bash stream reports its
//     full output as "(unavailable)". glob keeps the modification-time head
//     of an over-cap result (dsh's sampleOverCapGlobResults: false).
//   - the 64 KiB search-meta cap also trims the matches of a single oversized
//     file group, so the persisted meta always fits (dsh keeps that group).
//   - reads are confined too, and an escape is FsError FS_SANDBOX_DENIED with
//     a message naming the path, not dsh's "[sandbox: …]" marker and
//     escalation hint (prism has no escalation).
//   - edit on a missing file is FS_NOT_FOUND "not found" rather than dsh's
//     FS_STALE_VERSION "file changed since it was read": prism has no
//     read-before-write policy and no fs/observed events.
//   - read measures line length in Unicode code points, not UTF-16 units.
//   - a file write creates gets mode 0644 (dsh leaves its 0600 staging mode).
//   - bash has no run_in_background (a call that sets it is refused), no
//     managed DSH_* variables and no sandbox; processes that still hold its
//     output pipes after the shell exits are killed after the grace period.

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
