package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"prism/core"
)

// dsh's FsError codes (packages/fs/fs/src/types.ts: FsErrorCode) that the
// file tools raise.
const (
	CodeFsNotFound       = "FS_NOT_FOUND"
	CodeFsNotDirectory   = "FS_NOT_DIRECTORY"
	CodeFsNotText        = "FS_NOT_TEXT"
	CodeFsNotRegularFile = "FS_NOT_REGULAR_FILE"
	CodeFsSandboxDenied  = "FS_SANDBOX_DENIED"
	CodeFsPermission     = "FS_PERMISSION_DENIED"
	CodeFsIOError        = "FS_IO_ERROR"
	CodeFsAmbiguousEdit  = "FS_AMBIGUOUS_EDIT"
	CodeFsEditNotFound   = "FS_EDIT_NOT_FOUND"
	CodeFsAborted        = "FS_ABORTED"
)

// fsError returns dsh's FsError with a formatted message.
func fsError(code, format string, args ...any) *core.Error {
	return core.NewError("FsError", code, format, args...)
}

// maxSymlinkHops bounds symlink resolution, like the kernel's ELOOP limit.
const maxSymlinkHops = 40

// workspace is the confinement root of the file tools. Every path a tool
// touches is resolved against it, and a path that leaves it lexically ("..",
// an absolute path elsewhere) or through a symbolic link (a link to the
// outside, a symlinked parent directory, a dangling link whose target is
// outside) is refused with FsError FS_SANDBOX_DENIED before anything is read
// or written. The operations themselves then go through an os.Root opened at
// the resolved root, which refuses any escape a concurrent change might
// introduce after the check.
type workspace struct {
	root string // absolute and clean, as configured (display paths use it)
	real string // root with every symbolic link resolved
}

// newWorkspace validates dir as a workspace root.
func newWorkspace(dir string) (*workspace, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("workspace: no root directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %q: not a directory", dir)
	}
	return &workspace{root: abs, real: real}, nil
}

// target is a path resolved inside the workspace.
type target struct {
	// display is the absolute, lexically cleaned path (dsh's displayPath):
	// what the model-facing text and the read meta carry.
	display string
	// rel is the fully resolved path relative to the workspace's real root
	// ("." for the root itself), free of symbolic links at resolution time.
	rel string
	// abs is the fully resolved absolute path; it keys the per-file locks.
	abs string
}

// resolve resolves a model-supplied path for verb ("read", "write", …). An
// empty path is FS_NOT_FOUND, as in dsh's resolveLocalTarget; a path outside
// the workspace is FS_SANDBOX_DENIED naming the path as given.
func (w *workspace) resolve(verb, path string) (target, error) {
	if strings.TrimSpace(path) == "" {
		return target{}, fsError(CodeFsNotFound, "file_path must be a non-empty string")
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.root, abs)
	}
	abs = filepath.Clean(abs)
	if !within(w.root, abs) && !within(w.real, abs) {
		return target{}, fsError(CodeFsSandboxDenied,
			"cannot %s %q: the path is outside the workspace %q", verb, path, w.root)
	}
	real, err := realpath(abs)
	if err != nil {
		return target{}, fsError(CodeFsIOError, "cannot %s %q: %v", verb, path, err)
	}
	if !within(w.real, real) {
		return target{}, fsError(CodeFsSandboxDenied,
			"cannot %s %q: the path resolves through a symbolic link to %q, outside the workspace %q",
			verb, path, real, w.root)
	}
	rel, err := filepath.Rel(w.real, real)
	if err != nil {
		return target{}, fsError(CodeFsIOError, "cannot %s %q: %v", verb, path, err)
	}
	return target{display: abs, rel: rel, abs: real}, nil
}

// open opens the workspace's real root for one operation.
func (w *workspace) open() (*os.Root, error) {
	r, err := os.OpenRoot(w.real)
	if err != nil {
		return nil, fsError(CodeFsIOError, "cannot open the workspace %q: %v", w.root, err)
	}
	return r, nil
}

// rootError maps an os.Root failure on t to dsh's FsError vocabulary: an
// escape the pre-check did not see (a concurrent symlink swap) is
// FS_SANDBOX_DENIED, a missing path FS_NOT_FOUND, a permission failure
// FS_PERMISSION_DENIED, anything else FS_IO_ERROR.
func rootError(verb string, t target, err error) error {
	switch {
	case err == nil:
		return nil
	case isEscape(err):
		return fsError(CodeFsSandboxDenied, "cannot %s %q: the path escapes the workspace", verb, t.display)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fsError(CodeFsNotFound, "cannot %s %q: not found", verb, t.display)
	case errors.Is(err, fs.ErrPermission):
		return fsError(CodeFsPermission, "cannot %s %q: permission denied", verb, t.display)
	default:
		return fsError(CodeFsIOError, "cannot %s %q: %v", verb, t.display, err)
	}
}

// isEscape reports os.Root's refusal of a path that leaves the root.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// within reports whether path (absolute, clean) is root or below it.
func within(root, path string) bool {
	if path == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(path, root)
	}
	return strings.HasPrefix(path, root+string(filepath.Separator))
}

// realpath resolves every symbolic link in the existing components of abs
// (absolute and clean), the final one included even when it dangles, and
// joins the missing remainder lexically. Unlike filepath.EvalSymlinks it
// does not fail on a missing tail, so a dangling link is resolved to where a
// write through it would land.
func realpath(abs string) (string, error) {
	comps := splitPath(abs)
	cur := string(filepath.Separator)
	hops := 0
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Nothing below a missing component exists, so the rest of the
			// path cannot hold a link: join it lexically.
			return filepath.Join(append([]string{next}, comps[i+1:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", fmt.Errorf("too many levels of symbolic links at %q", next)
		}
		link, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(cur, link)
		}
		// Restart from the link's target with the components still to walk.
		comps = append(splitPath(filepath.Clean(link)), comps[i+1:]...)
		cur = string(filepath.Separator)
		i = -1
	}
	return cur, nil
}

func splitPath(abs string) []string {
	return strings.Split(strings.TrimPrefix(abs, string(filepath.Separator)), string(filepath.Separator))
}

// pathLocks serializes mutations of one resolved file (dsh's per-target
// lock), so concurrent edits from several sessions on one workspace apply in
// turn instead of losing each other's changes.
var pathLocks = struct {
	sync.Mutex
	m map[string]*pathLock
}{m: map[string]*pathLock{}}

type pathLock struct {
	sync.Mutex
	refs int
}

// lockPath locks key and returns its unlock function.
func lockPath(key string) func() {
	pathLocks.Lock()
	l := pathLocks.m[key]
	if l == nil {
		l = &pathLock{}
		pathLocks.m[key] = l
	}
	l.refs++
	pathLocks.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		pathLocks.Lock()
		if l.refs--; l.refs == 0 {
			delete(pathLocks.m, key)
		}
		pathLocks.Unlock()
	}
}
