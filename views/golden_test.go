package views_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

var update = flag.Bool("update", false, "rewrite golden files")

// normalize parses an HTML fragment and writes one element per line,
// indented by depth, so golden diffs are readable.
func normalize(t *testing.T, src string) string {
	t.Helper()
	ctx := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(src), ctx)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		ind := strings.Repeat("  ", depth)
		switch n.Type {
		case html.ElementNode:
			b.WriteString(ind + "<" + n.Data)
			for _, a := range n.Attr {
				b.WriteString(" " + a.Key + "=" + quote(a.Val))
			}
			b.WriteString(">\n")
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c, depth+1)
			}
		case html.TextNode:
			if strings.TrimSpace(n.Data) != "" {
				b.WriteString(ind + quote(n.Data) + "\n")
			}
		}
	}
	for _, n := range nodes {
		walk(n, 0)
	}
	return b.String()
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
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
