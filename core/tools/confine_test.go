package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/tools"
)

// escapeFixture is a workspace next to an outside directory holding a
// secret, with links that lead out of the workspace.
type escapeFixture struct {
	*env
	outside string // the outside directory
	secret  string // outside/secret.txt
	up      string // a relative path from the workspace to the secret
}

const secretText = "TOP SECRET\n"

func newEscapeFixture(t *testing.T, opts tools.Options) *escapeFixture {
	t.Helper()
	e := newEnv(t, opts)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := filepath.Rel(e.ws, secret)
	if err != nil || !strings.HasPrefix(up, "..") {
		t.Fatalf("fixture: %q relative to %q is %q (%v)", secret, e.ws, up, err)
	}
	links := map[string]string{
		"link.txt": secret,                                // a file link to the outside
		"dirlink":  outside,                               // a directory link to the outside
		"dangling": filepath.Join(outside, "created.txt"), // a dangling link whose target is outside
		"rel-link": up,                                    // a relative link to the outside
		"inner":    "real.txt",                            // a link that stays inside
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(e.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	e.write("real.txt", "inside\n")
	if err := os.Mkdir(filepath.Join(e.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &escapeFixture{env: e, outside: outside, secret: secret, up: up}
}

// untouched asserts the outside directory still holds only the unchanged
// secret.
func (f *escapeFixture) untouched(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(f.secret)
	if err != nil || string(data) != secretText {
		t.Errorf("the outside secret changed: %q (%v)", data, err)
	}
	entries, err := os.ReadDir(f.outside)
	if err != nil || len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the outside directory holds %v (%v), want only secret.txt", names, err)
	}
}

// denied asserts a FS_SANDBOX_DENIED failure whose message names path and
// does not leak the secret.
func denied(t *testing.T, o outcome, path string) {
	t.Helper()
	f, ok := o.res.(*core.Failure)
	if !ok {
		t.Fatalf("%s: call succeeded: %s", path, o.text(t))
	}
	if f.Error.Info == nil || *f.Error.Info != (core.ErrorInfo{Name: "FsError", Code: "FS_SANDBOX_DENIED"}) {
		t.Errorf("%s: error info %+v, want FsError/FS_SANDBOX_DENIED (%s)", path, f.Error.Info, f.Error.Message)
	}
	if !strings.Contains(f.Error.Message, `"`+path+`"`) {
		t.Errorf("%s: message %q does not name the path", path, f.Error.Message)
	}
	if strings.Contains(o.text(t), "TOP SECRET") {
		t.Errorf("%s: the result leaks the secret", path)
	}
}

func TestConfinementRefusesEscapes(t *testing.T) {
	f := newEscapeFixture(t, tools.Options{AllowBash: true})
	escapes := []string{
		f.up,                            // ../<outside>/secret.txt
		"sub/../" + f.up,                // a detour that still leaves
		f.secret,                        // an absolute path outside
		"/etc/passwd",                   // the classic
		"link.txt",                      // a symlink to an outside file
		"dirlink/secret.txt",            // a file under a symlinked directory
		"dirlink",                       // the symlinked directory itself
		"dangling",                      // a dangling symlink whose target is outside
		"rel-link",                      // a relative symlink that climbs out
		"dirlink/new/deeper.txt",        // a missing path under a symlinked directory
		"dirlink/../../etc/passwd",      // lexically inside nothing
		filepath.Join(f.ws, f.up),       // absolute, through the workspace, then out
		filepath.Join(f.ws, "link.txt"), // absolute path of an escaping link
	}
	for _, p := range escapes {
		t.Run(p, func(t *testing.T) {
			denied(t, f.call("read", map[string]any{"file_path": p}), p)
			denied(t, f.call("write", map[string]any{"file_path": p, "content": "pwned\n"}), p)
			denied(t, f.call("edit", map[string]any{"file_path": p, "old_string": "TOP", "new_string": "pwned"}), p)
			f.untouched(t)
		})
	}
	for _, p := range []string{f.up, "dirlink", "/etc", "..", f.outside} {
		t.Run("search "+p, func(t *testing.T) {
			denied(t, f.call("grep", map[string]any{"pattern": "SECRET", "path": p}), p)
			denied(t, f.call("glob", map[string]any{"pattern": "*", "path": p}), p)
			denied(t, f.call("bash", map[string]any{"command": "cat secret.txt", "description": "Read it", "workdir": p}), p)
		})
	}
	f.untouched(t)
}

func TestConfinementWalksDoNotFollowLinks(t *testing.T) {
	f := newEscapeFixture(t, tools.Options{})
	if got := f.call("grep", map[string]any{"pattern": "SECRET"}).ok(t); got != "No matches found" {
		t.Errorf("grep over the workspace reached outside: %q", got)
	}
	if got := f.call("glob", map[string]any{"pattern": "*"}).ok(t); got != "real.txt" {
		t.Errorf("glob listed %q, want only the regular file real.txt", got)
	}
}

func TestConfinementAllowsInsideLinks(t *testing.T) {
	f := newEscapeFixture(t, tools.Options{})
	if got := f.call("read", map[string]any{"file_path": "inner"}).ok(t); !strings.Contains(got, "1: inside") {
		t.Errorf("read through an inside link: %q", got)
	}
	// A write through a link updates its target and keeps the link.
	f.call("write", map[string]any{"file_path": "inner", "content": "changed\n"}).ok(t)
	if fi, err := os.Lstat(f.path("inner")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if got := f.read("real.txt"); got != "changed\n" {
		t.Errorf("target %q", got)
	}
	// Paths that only look like escapes stay inside.
	f.call("write", map[string]any{"file_path": "sub/../ok.txt", "content": "x"}).ok(t)
	f.call("read", map[string]any{"file_path": f.path("ok.txt")}).ok(t)
	f.call("read", map[string]any{"file_path": "./sub/../ok.txt"}).ok(t)
	f.untouched(t)
}

func TestWorkspaceFromSessionCwd(t *testing.T) {
	list, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(list...)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(t.Context(), core.Call{Name: "read", RawArguments: `{"file_path":"a.txt"}`, Cwd: ws})
	if res.IsError() {
		t.Fatalf("read in the session cwd failed: %v", res.Projection().Content.PlainText())
	}
	res = reg.Execute(t.Context(), core.Call{Name: "read", RawArguments: `{"file_path":"a.txt"}`})
	if f, ok := res.(*core.Failure); !ok || f.Error.Info == nil || f.Error.Info.Code != core.CodeUnavailable {
		t.Errorf("a call without a cwd: %+v", res)
	}
	if _, err := tools.Builtins(tools.Options{Workspace: filepath.Join(ws, "missing")}); err == nil {
		t.Error("Builtins accepted a missing workspace")
	}
	if _, err := tools.Builtins(tools.Options{Workspace: filepath.Join(ws, "a.txt")}); err == nil {
		t.Error("Builtins accepted a file as the workspace")
	}
}
