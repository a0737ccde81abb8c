package prismtest

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aymanbagabas/go-udiff"

	"prism/views/testgen"
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
		t.Errorf("%s: %s (go test -update rewrites it):\n%s",
			c, whereDiffers(path, string(want), got), udiff.Unified(path, "got", string(want), got))
	}
}

// whereDiffers says which card differs from golden path and names the
// field where they first differ: "the completed card differs from golden
// P at article[…] > header.card-head > span.title: golden "…", got "…"".
func whereDiffers(path, want, got string) string {
	wc, wp, wd, ok1 := testgen.Sections(want)
	gc, gp, gd, ok2 := testgen.Sections(got)
	switch {
	case !ok1 || !ok2:
		return "the cards differ from golden " + path
	case wc != gc:
		return "the call differs from golden " + path + ": " + testgen.FirstDifference(wc, gc)
	case wp != gp:
		return "the pending card differs from golden " + path + " at " + testgen.FirstDifference(wp, gp)
	case wd != gd:
		return "the completed card differs from golden " + path + " at " + testgen.FirstDifference(wd, gd)
	}
	return "the cards differ from golden " + path
}

// goldenText is the content of the call's golden file (testgen.Golden:
// the form prism testgen writes too).
func (c *CardResult) goldenText(t testing.TB) string {
	t.Helper()
	cwds := c.cwds
	if cwds == nil {
		cwds = []string{c.Cwd}
		if real, err := filepath.EvalSymlinks(c.Cwd); c.Cwd != "" && err == nil && real != c.Cwd {
			cwds = append(cwds, real)
		}
	}
	out, err := testgen.Golden(c.Tool, c.Args, cwds, c.Pending.HTML, c.Completed.HTML)
	if err != nil {
		t.Fatalf("prismtest: %v", err)
	}
	return out
}
