package web

import (
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestRouteTable: the main listener registers exactly the table's rows (a
// GET row with its HEAD, an any-method row for every method), no row is
// there twice, and the public paths are the ones the README's "JSON API and
// routes" names.
func TestRouteTable(t *testing.T) {
	s := New(Deps{Sessions: &logSource{}, Presenter: genericPresenter{}})
	defer s.Close()
	table := s.routeTable()
	want := map[string]bool{}
	seen := map[string]bool{}
	for _, r := range table {
		key := r.method + " " + r.pattern
		if seen[key] {
			t.Errorf("%s is in the table twice", key)
		}
		seen[key] = true
		if !strings.HasPrefix(r.pattern, "/") {
			t.Errorf("%s: a pattern starts with /", key)
		}
		if r.head != nil && r.method != http.MethodGet {
			t.Errorf("%s: only a GET row has a HEAD handler", key)
		}
		switch r.method {
		case anyMethod:
			continue // echo's Any: every method, checked below by prefix
		case http.MethodGet:
			want[http.MethodHead+" "+r.pattern] = true
		}
		want[key] = true
	}
	got := map[string]bool{}
	for _, r := range s.Routes() {
		if r.Path == "/s/*" {
			continue
		}
		got[r.Method+" "+r.Path] = true
	}
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("registered routes differ from the table: missing %v, not in the table %v", missing, extra)
	}
	for path, public := range map[string]bool{
		"/s/AAAA": true, "/s/AAAA/stream": true, "/static/app.css": true, "/static/highlight.css": true,
		"/login": true, "/logout": true, "/healthz": true,
		"/": false, "/stream": false, "/sessions/x": false, "/api/sessions": false, "/search": false,
		"/api/search": false, "/shares/x/revoke": false, "/compare/a/b": false, "/compare/a/b/stream": false, "/compare": false, "/loginx": false, "/healthz/": false, "/s": false,
	} {
		if s.classes.public(path) != public {
			t.Errorf("public(%q) = %v, want %v", path, !public, public)
		}
	}
	if u := strings.Join(trueKeys(s.classes.upload), " "); u != "/api/sessions/import /v1/traces" {
		t.Errorf("upload routes: %s, want /api/sessions/import /v1/traces", u)
	}
	if r := strings.Join(trueKeys(s.classes.raw), " "); r != "/board/stream /compare/:a/:b/stream /healthz /sessions/:id/stream /stream" {
		t.Errorf("raw routes: %s", r)
	}
}

func trueKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
