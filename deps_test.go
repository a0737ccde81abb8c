package main_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// rule constrains what one layer of prism may import (ARCHITECTURE.md,
// "Import rules").
type rule struct {
	layer     string   // import-path prefix of the layer's packages
	allowOurs []string // prism packages (prefixes) the layer may import
	forbid    []string // third-party or std prefixes it must not import
	// tests extends the rule to the layer's tests (their imports and
	// everything those import).
	tests bool
	// testOurs are more prism packages the layer's tests may import.
	testOurs []string
	// except are sublayers with a rule of their own, which this one does
	// not cover.
	except []string
}

const module = "prism"

var (
	webLibs = []string{"github.com/labstack/", "github.com/a-h/templ", "github.com/starfederation/",
		"github.com/PuerkitoBio/goquery", "github.com/chromedp/", "net/http/httptest"}
	// sqliteLib is SQLite's driver; pgx brings database/sql/driver along.
	sqliteLib = "github.com/mattn/go-sqlite3"
	dbLibs    = []string{sqliteLib, "database/sql"}
	pgLibs    = []string{"github.com/jackc/"}
	// dshFormat is the decoders of the session files import reads (prism
	// JSONL and dsh's formats), which the stores and web use.
	dshFormat = "prism/sources/dsh"
)

var layerRules = []rule{
	{layer: "prism/core", allowOurs: []string{"prism/core"},
		forbid: concat([]string{"testing", "github.com/modelcontextprotocol/"}, webLibs, dbLibs, pgLibs)},
	{layer: "prism/mcp", allowOurs: []string{"prism/core", "prism/mcp"},
		forbid: append(append([]string{"testing"}, webLibs...), dbLibs...)},
	{layer: "prism/sources", allowOurs: []string{"prism/core", "prism/sources"}, except: []string{"prism/sources/watch"},
		forbid: concat([]string{"testing", "github.com/modelcontextprotocol/"}, webLibs, dbLibs, pgLibs)},
	{layer: "prism/sources/watch", allowOurs: []string{"prism/core", "prism/store", "prism/sources"},
		forbid: concat([]string{"testing", "github.com/modelcontextprotocol/"}, webLibs, dbLibs, pgLibs)},
	{layer: "prism/store", allowOurs: []string{"prism/core", "prism/store", dshFormat},
		forbid: concat([]string{"testing"}, webLibs, dbLibs, pgLibs), tests: true},
	{layer: "prism/db", allowOurs: []string{"prism/core", "prism/store", "prism/db", dshFormat},
		forbid: concat([]string{"testing"}, webLibs, pgLibs), tests: true},
	{layer: "prism/pgstore", allowOurs: []string{"prism/core", "prism/store", "prism/pgstore", dshFormat},
		forbid: concat([]string{"testing", sqliteLib}, webLibs), tests: true, testOurs: []string{"prism/internal/pgtest", "prism/internal/pgcluster"}},
	{layer: "prism/internal/pgcluster", allowOurs: []string{"prism/internal/pgcluster"},
		forbid: concat([]string{"testing", sqliteLib}, webLibs)},
	{layer: "prism/views", allowOurs: []string{"prism/core", "prism/views"},
		forbid: append([]string{"testing", "github.com/labstack/", "net/http/httptest"}, dbLibs...), tests: true},
	{layer: "prism/web", allowOurs: []string{"prism/core", "prism/views", "prism/static", "prism/web", dshFormat},
		forbid: concat([]string{"testing", "net/http/httptest"}, dbLibs, pgLibs)},
	{layer: "prism/static", allowOurs: []string{"prism/static"}, forbid: []string{"net/http/httptest", "testing"}},
	{layer: "prism/engine", allowOurs: []string{"prism/core", "prism/store", "prism/db", "prism/pgstore", "prism/engine", dshFormat, "prism/sources/claudecode", "prism/sources/codex"},
		forbid: concat([]string{"testing"}, webLibs)},
	{layer: "prism/backend", allowOurs: []string{"prism/core", "prism/store", "prism/mcp", "prism/views", "prism/static", "prism/web", "prism/backend", dshFormat, "prism/sources/claudecode", "prism/sources/codex", "prism/sources/otel"},
		forbid: []string{"testing", "net/http/httptest"}},
}

// isTestHelper reports whether path is a test-helper package (its name
// ends in "test": core/coretest, core/agent/agenttest). Such a package may
// import testing, and only tests may import it.
func isTestHelper(path string) bool {
	return strings.HasSuffix(path[strings.LastIndexByte(path, '/')+1:], "test")
}

type goPackage struct {
	ImportPath   string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// TestImportDirections enforces prism's layering (ARCHITECTURE.md, "Import
// rules") on the dependency graph, as layerRules says: core imports nothing
// of ours outside core and no web, template, database or MCP library; mcp
// (the MCP SDK's adapter) imports core only; store imports core, db and
// pgstore import core and store — their tests too; engine opens one of
// them and imports no web library; views imports core only,
// its tests too; web imports core, views and static, never a store;
// backend adapts the stores to web; sources (the decoders of session
// files, one package per source) import core only, and their watcher core,
// store and sources. Test-helper packages (coretest,
// agenttest) may import testing, and no production package depends on them.
func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*goPackage{}
	var order []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
		order = append(order, p.ImportPath)
	}
	ours := func(dep string) bool { return dep == module || strings.HasPrefix(dep, module+"/") }
	checked, checkedTests := 0, 0
	for _, path := range order {
		p := pkgs[path]
		if !isTestHelper(path) {
			for _, dep := range p.Deps {
				if ours(dep) && isTestHelper(dep) {
					t.Errorf("%s depends on the test helper %s: only tests may import it", path, dep)
				}
			}
		}
		for _, r := range layerRules {
			if path != r.layer && !strings.HasPrefix(path, r.layer+"/") || hasPrefix(path, r.except) {
				continue
			}
			checked++
			forbid := r.forbid
			if isTestHelper(path) {
				forbid = without(forbid, "testing")
			}
			check := func(what string, deps []string) {
				for _, dep := range deps {
					switch {
					case dep == path:
					case ours(dep):
						if !hasPrefix(dep, r.allowOurs) {
							t.Errorf("%s imports %s: layer %s may import only %v", what, dep, r.layer, r.allowOurs)
						}
					case hasPrefix(dep, forbid):
						t.Errorf("%s depends on %s, which layer %s must not import", what, dep, r.layer)
					}
				}
			}
			check(path, p.Deps)
			if !r.tests {
				continue
			}
			// The layer's tests: their direct imports, and everything
			// our imported packages depend on. Test helpers may bring
			// testing; the test binary has it anyway.
			testForbid := without(forbid, "testing")
			for _, imp := range append(append([]string(nil), p.TestImports...), p.XTestImports...) {
				checkedTests++
				deps := []string{imp}
				if q := pkgs[imp]; q != nil {
					deps = append(deps, q.Deps...)
				}
				for _, dep := range deps {
					switch {
					case dep == path:
					case ours(dep):
						if !hasPrefix(dep, r.allowOurs) && !hasPrefix(dep, r.testOurs) {
							t.Errorf("tests of %s import %s (via %s): layer %s may import only %v", path, dep, imp, r.layer, append(r.allowOurs, r.testOurs...))
						}
					case hasPrefix(dep, testForbid):
						t.Errorf("tests of %s depend on %s (via %s), which layer %s must not import", path, dep, imp, r.layer)
					}
				}
			}
		}
	}
	if checked == 0 || checkedTests == 0 {
		t.Fatalf("checked %d layered packages and %d test imports; want both > 0", checked, checkedTests)
	}
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p) && (strings.HasSuffix(p, "/") || strings.HasPrefix(path[len(p):], "/")) {
			return true
		}
	}
	return false
}
