package testgen

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Outline writes an HTML fragment (parsed as the children of a <body>) as
// an outline: one element per line, indented two spaces per depth, its
// attributes in source order as name="value", and each non-blank text node
// on a line of its own, quoted. Quoting escapes only '"', '\\', newlines
// and tabs, so the text reads as the page shows it.
func Outline(fragment string) (string, error) {
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(fragment), body)
	if err != nil {
		return "", fmt.Errorf("parse the HTML fragment: %w", err)
	}
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		indent := strings.Repeat("  ", depth)
		switch n.Type {
		case html.ElementNode:
			b.WriteString(indent + "<" + n.Data)
			for _, a := range n.Attr {
				b.WriteString(" " + a.Key + "=" + Quote(a.Val))
			}
			b.WriteString(">\n")
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c, depth+1)
			}
		case html.TextNode:
			if strings.TrimSpace(n.Data) != "" {
				b.WriteString(indent + Quote(n.Data) + "\n")
			}
		}
	}
	for _, n := range nodes {
		walk(n, 0)
	}
	return b.String(), nil
}

// Quote writes s between double quotes, escaping '"', '\\', newlines and
// tabs (and nothing else).
func Quote(s string) string {
	var b strings.Builder
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
