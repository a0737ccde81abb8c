package prismtest

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"

	"prism/views/viewstest"
)

// updateFlag is the flag that makes Golden rewrite its files.
const updateFlag = "update"

func init() {
	// A package initialized before this one (another golden helper) may
	// have defined -update already: Golden then follows that flag.
	if flag.Lookup(updateFlag) == nil {
		flag.Bool(updateFlag, false, "rewrite golden files (prismtest's Golden, and any helper that reads -update)")
	}
}

// Updating reports whether the test binary runs with -update: Golden
// rewrites its files instead of comparing. prismtest defines the -update
// flag; a test package that declared its own must drop it (the flag package
// refuses a second definition) and call Updating instead.
func Updating() bool {
	f := flag.Lookup(updateFlag)
	if f == nil {
		return false
	}
	if g, ok := f.Value.(flag.Getter); ok {
		b, _ := g.Get().(bool)
		return b
	}
	b, _ := strconv.ParseBool(f.Value.String())
	return b
}

// Golden compares the call's two cards with the golden file at path
// (relative to the test's package directory, e.g.
// "testdata/greet.golden") and fails t with a unified diff when they
// differ; with -update (go test -update) it writes the file instead.
//
// The file holds the call, then the pending and the completed card as an
// outline — one element per line, indented by depth, with its attributes in
// order and each text quoted, the form of prism's own card goldens —
// readable in review and in a diff. The cwd
// the call ran in is written as {cwd}, so the file is the same on every
// machine. Read a golden you create before committing it: it locks in what
// you looked at.
func (c *CardResult) Golden(t testing.TB, path string) {
	t.Helper()
	got := c.goldenText(t)
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("%s: write golden: %v", c, err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("%s: write golden: %v", c, err)
		}
		t.Logf("%s: wrote golden %s", c, path)
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: golden file %s does not exist: run go test -update to write it, then read it", c, path)
	}
	if err != nil {
		t.Fatalf("%s: read golden: %v", c, err)
	}
	if string(want) != got {
		t.Errorf("%s: the cards differ from golden %s (go test -update rewrites it):\n%s",
			c, path, udiff.Unified(path, "got", string(want), got))
	}
}

// goldenText is the content of the call's golden file.
func (c *CardResult) goldenText(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("call " + strconv.Quote(c.Tool) + " " + strconv.Quote(c.Args) + "\n")
	b.WriteString("\n-- pending --\n")
	b.WriteString(outline(t, c.withoutCwd(c.Pending.HTML)))
	b.WriteString("\n-- completed --\n")
	b.WriteString(outline(t, c.withoutCwd(c.Completed.HTML)))
	return b.String()
}

// withoutCwd writes the call's cwd (and its resolved form) as {cwd}.
func (c *CardResult) withoutCwd(s string) string {
	if c.Cwd == "" {
		return s
	}
	if real, err := filepath.EvalSymlinks(c.Cwd); err == nil && real != c.Cwd {
		s = strings.ReplaceAll(s, real, "{cwd}")
	}
	return strings.ReplaceAll(s, c.Cwd, "{cwd}")
}

// outline writes an HTML fragment as viewstest.Outline does (the form of
// prism's own card goldens), failing t on HTML that does not parse.
func outline(t testing.TB, fragment string) string {
	t.Helper()
	out, err := viewstest.Outline(fragment)
	if err != nil {
		t.Fatalf("prismtest: %v", err)
	}
	return out
}
