package views_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/views/viewstest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// normalize writes an HTML fragment as an outline (viewstest.Outline), so
// golden diffs are readable.
func normalize(t *testing.T, src string) string {
	t.Helper()
	out, err := viewstest.Outline(src)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// golden compares normalized HTML against testdata/golden/<dir>/<name>.html;
// -update rewrites it.
func golden(t *testing.T, dir, name, htmlSrc string) {
	t.Helper()
	got := normalize(t, htmlSrc)
	path := filepath.Join("..", "testdata", "golden", dir, name+".html")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, d)
	}
}
