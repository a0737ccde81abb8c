// Command copyds copies the Datastar browser client from the pinned Go module
// github.com/starfederation/datastar@v1.0.0 (bundles/datastar.js and its
// source map) into the current directory, after checking the module's
// checksum and the bundle's version line. It is run by `go generate` in
// package static; the copied files are build outputs, never committed.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

const (
	module  = "github.com/starfederation/datastar@v1.0.0"
	wantSum = "h1:SPxQUEE0/C4S5Q5IE+RglgiESTwc7qZJS7Uh2eQWSx8="
	header  = "// Datastar v1.0.0"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "copyds:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return fmt.Errorf("go mod download %s: %v: %s", module, err, ee.Stderr)
		}
		return fmt.Errorf("go mod download %s: %w", module, err)
	}
	var info struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return fmt.Errorf("decode go mod download output: %w", err)
	}
	if info.Error != "" {
		return fmt.Errorf("go mod download %s: %s", module, info.Error)
	}
	if info.Sum != wantSum {
		return fmt.Errorf("module %s has sum %s, want %s", module, info.Sum, wantSum)
	}
	src, err := os.ReadFile(filepath.Join(info.Dir, "bundles", "datastar.js"))
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(src, []byte(header)) {
		return fmt.Errorf("bundles/datastar.js does not start with %q", header)
	}
	if err := os.WriteFile("datastar.js", src, 0o644); err != nil {
		return err
	}
	// The source map is optional; serving it avoids a 404 when devtools open.
	if m, err := os.ReadFile(filepath.Join(info.Dir, "bundles", "datastar.js.map")); err == nil {
		if err := os.WriteFile("datastar.js.map", m, 0o644); err != nil {
			return err
		}
	}
	return nil
}
