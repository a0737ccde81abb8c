package web_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the import directions of DESIGN.md §2: views imports
// core only (of prism's packages), web imports core, views and static —
// never db — and neither links a test package into production.
func TestDeps(t *testing.T) {
	for pkg, allowed := range map[string][]string{
		"prism/views": {"prism/core"},
		"prism/web":   {"prism/core", "prism/views", "prism/static"},
	} {
		out, err := exec.Command("go", "list", "-deps", "-json", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for dec.More() {
			var p struct{ ImportPath string }
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			dep := p.ImportPath
			switch {
			case dep == pkg:
			case dep == "testing" || dep == "net/http/httptest" || strings.Contains(dep, "go-sqlite3"):
				t.Errorf("%s depends on %s", pkg, dep)
			case strings.HasPrefix(dep, "prism/"):
				ok := false
				for _, a := range allowed {
					if dep == a || strings.HasPrefix(dep, a+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s must not import %s", pkg, dep)
				}
			}
		}
	}
}
