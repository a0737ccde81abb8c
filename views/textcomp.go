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
// for a cut line. The lines are escaped into a small batch that is written
// out whenever it fills: a 20,000-line clip (the projections page) is
// neither escaped line by line into fresh strings nor held whole.
func clipLines(ls []Line) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		size := 0
		for _, l := range ls {
			size += len(l.Text) + 1
		}
		b := make([]byte, 0, min(size+size/8+16, clipBatch))
		for i, l := range ls {
			if i > 0 {
				b = append(b, '\n')
			}
			b = appendMarked(b, l.Text)
			if l.Cut > 0 {
				b = append(b, `<span class="cut">… +`...)
				b = append(b, Count(l.Cut)...)
				b = append(b, ` chars</span>`...)
			}
			if len(b) >= clipBatch {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
		_, err := w.Write(b)
		return err
	})
}

// clipBatch is how many bytes clipLines gathers before writing them.
const clipBatch = 16 << 10

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
		size := 0
		for _, t := range l.Tokens {
			size += len(t.Text) + len(t.Class) + len(`<span class=""></span>`)
		}
		b := make([]byte, 0, size+size/8+16)
		for _, t := range l.Tokens {
			if t.Class == "" {
				b = appendMarked(b, t.Text)
				continue
			}
			b = append(b, `<span class="`...)
			b = appendEscaped(b, t.Class)
			b = append(b, `">`...)
			b = appendMarked(b, t.Text)
			b = append(b, `</span>`...)
		}
		if l.Cut > 0 {
			b = append(b, `<span class="cut">… +`...)
			b = append(b, Count(l.Cut)...)
			b = append(b, ` chars</span>`...)
		}
		_, err := w.Write(b)
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

// appendMarked appends escapeMarked(s) to dst; text without a marker (the
// common case) is escaped straight into dst, building no string.
func appendMarked(dst []byte, s string) []byte {
	// "&lt;U+" is in the escaped text exactly when "<U+" is in s: only
	// '<' escapes to "&lt;" ('&' itself becomes "&amp;").
	if strings.Contains(s, "<U+") {
		return append(dst, escapeMarked(s)...)
	}
	return appendEscaped(dst, s)
}

// appendEscaped appends html.EscapeString(s) to dst: the same five
// characters, the same entities.
func appendEscaped(dst []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '\'':
			esc = "&#39;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		default:
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, esc...)
		last = i + 1
	}
	return append(dst, s[last:]...)
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
