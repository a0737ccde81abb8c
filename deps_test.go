package main_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// rule constrains what one layer of prism may import (DESIGN.md §2).
type rule struct {
	layer     string   // import-path prefix of the layer's packages
	allowOurs []string // prism packages (prefixes) the layer may import
	forbid    []string // third-party or std prefixes it must not import
}

const module = "prism"

var layerRules = []rule{
	{layer: "prism/core", allowOurs: []string{"prism/core"},
		forbid: []string{"github.com/labstack/", "github.com/a-h/templ", "github.com/starfederation/",
			"github.com/mattn/go-sqlite3", "database/sql", "net/http/httptest", "testing",
			"github.com/PuerkitoBio/goquery", "github.com/chromedp/"}},
	{layer: "prism/db", allowOurs: []string{"prism/core", "prism/db"},
		forbid: []string{"github.com/labstack/", "github.com/a-h/templ", "github.com/starfederation/", "net/http/httptest", "testing"}},
	{layer: "prism/views", allowOurs: []string{"prism/core", "prism/views"},
		forbid: []string{"github.com/labstack/", "github.com/mattn/go-sqlite3", "database/sql", "net/http/httptest", "testing"}},
	{layer: "prism/web", allowOurs: []string{"prism/core", "prism/views", "prism/static", "prism/web"},
		forbid: []string{"github.com/mattn/go-sqlite3", "database/sql", "net/http/httptest", "testing"}},
	{layer: "prism/static", allowOurs: []string{"prism/static"}, forbid: []string{"net/http/httptest", "testing"}},
}

// TestImportDirections enforces the layering of DESIGN.md §2 on the
// production dependency graph (tests excluded): core imports nothing of
// ours and no web, template or database library; db and views import core
// only; web never imports db; static imports nothing of ours.
func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var pkg struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		deps, err := exec.Command("go", "list", "-deps", pkg.ImportPath).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg.ImportPath, err)
		}
		for _, r := range layerRules {
			if pkg.ImportPath != r.layer && !strings.HasPrefix(pkg.ImportPath, r.layer+"/") {
				continue
			}
			checked++
			for _, dep := range strings.Fields(string(deps)) {
				if dep == pkg.ImportPath {
					continue
				}
				if dep == module || strings.HasPrefix(dep, module+"/") {
					if !hasPrefix(dep, r.allowOurs) {
						t.Errorf("%s imports %s: layer %s may import only %v", pkg.ImportPath, dep, r.layer, r.allowOurs)
					}
					continue
				}
				if hasPrefix(dep, r.forbid) {
					t.Errorf("%s depends on %s, which layer %s must not import", pkg.ImportPath, dep, r.layer)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no layered package was checked")
	}
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p) && (strings.HasSuffix(p, "/") || strings.HasPrefix(path[len(p):], "/")) {
			return true
		}
	}
	return false
}
