package views

import (
	"context"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/a-h/templ"
)

// Components for whitespace-exact text (pre blocks, commands, code lines),
// written in Go: templ would put a space around text expressions on their
// own lines.

// clipLines renders lines joined by newlines, each escaped, with a marker
// for a cut line.
func clipLines(ls []Line) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		for i, l := range ls {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(escapeMarked(l.Text))
			if l.Cut > 0 {
				b.WriteString(`<span class="cut">… +` + Count(l.Cut) + ` chars</span>`)
			}
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// commandText renders a terminal command, one "$ " prompt per line.
func commandText(lines []string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		for i, l := range lines {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(`<span class="prompt">$ </span>`)
			b.WriteString(escapeMarked(l))
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// codeTokens renders highlighted tokens of one line.
func codeTokens(l CodeLine) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		for _, t := range l.Tokens {
			if t.Class == "" {
				b.WriteString(escapeMarked(t.Text))
				continue
			}
			b.WriteString(`<span class="` + html.EscapeString(t.Class) + `">`)
			b.WriteString(escapeMarked(t.Text))
			b.WriteString(`</span>`)
		}
		if l.Cut > 0 {
			b.WriteString(`<span class="cut">… +` + Count(l.Cut) + ` chars</span>`)
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

// diffText renders one diff row's code cell content.
func diffText(l DiffLine) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, `<span class="op">`+string(l.Op)+`</span>`+escapeMarked(l.Text))
		return err
	})
}

// markedText renders text escaped, its invisible-character markers styled.
func markedText(s string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, escapeMarked(s))
		return err
	})
}

// escapeMarked escapes cleaned text for HTML and wraps each marker clean
// put in place of an invisible character ("<U+202E>") in a span that
// styles it and names the character.
func escapeMarked(s string) string {
	e := html.EscapeString(s)
	if !strings.Contains(e, "&lt;U+") {
		return e
	}
	return markerSpans.Replace(e)
}

// markerSpans replaces the escaped markers of every invisible character.
var markerSpans = func() *strings.Replacer {
	var pairs []string
	for r, name := range invisibleNames {
		m := html.EscapeString(controlMarker(r))
		pairs = append(pairs, m, `<span class="ctl" title="`+fmt.Sprintf("U+%04X %s", r, name)+` (shown, not applied)">`+m+`</span>`)
	}
	return strings.NewReplacer(pairs...)
}()
