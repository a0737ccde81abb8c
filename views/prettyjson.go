package views

import (
	"encoding/json"
	"strings"
)

// JSONClip returns JSON text as NewClipN(prettyJSON(s), maxLines,
// maxRunes) would, without indenting what the clip leaves out: a large
// value (a 20,000-line result view, its meta) is walked twice — once to
// count its lines, once to build the lines shown — and never held indented
// in full. Text that is not JSON is clipped as it is.
func JSONClip(s string, maxLines, maxRunes int) Clip { return jsonClip(s, maxLines, maxRunes, 64<<10) }

// validJSONClip is JSONClip of text the caller knows to be valid JSON (a
// view core wrote): it is not checked again.
func validJSONClip(s string, maxLines, maxRunes int) Clip {
	return walkJSONClip(s, maxLines, maxRunes, 64<<10)
}

// jsonClip is JSONClip walking values from minSize bytes (smaller ones are
// indented whole, which is as fast for them).
func jsonClip(s string, maxLines, maxRunes, minSize int) Clip {
	if len(s) < minSize || !json.Valid([]byte(s)) {
		return NewClipN(prettyJSON(s), maxLines, maxRunes)
	}
	return walkJSONClip(s, maxLines, maxRunes, minSize)
}

// walkJSONClip is jsonClip of valid JSON text s.
func walkJSONClip(s string, maxLines, maxRunes, minSize int) Clip {
	if len(s) < minSize {
		return NewClipN(prettyJSON(s), maxLines, maxRunes)
	}
	total := prettyLines(s, nil, nil)
	if total <= PreviewLines {
		return NewClipN(prettyJSON(s), maxLines, maxRunes)
	}
	if maxLines < PreviewLines {
		maxLines = PreviewLines
	}
	headN := PreviewLines / 2
	tailN := PreviewLines - headN
	middleN := min(maxLines-PreviewLines, total-PreviewLines)
	c := Clip{Total: total, Omitted: total - PreviewLines - middleN,
		Head: lineSlice(headN), Middle: lineSlice(middleN), Tail: lineSlice(tailN)}
	want := func(n int) bool { return n <= headN+middleN || n > total-tailN }
	prettyLines(s, want, func(n int, line string) {
		l := clipLine(n, line, maxRunes)
		switch {
		case n <= headN:
			c.Head = append(c.Head, l)
		case n <= headN+middleN:
			c.Middle = append(c.Middle, l)
		default:
			c.Tail = append(c.Tail, l)
		}
	})
	return c
}

// clipLine is one shown line of a clip: cleaned and cut to maxRunes.
func clipLine(n int, s string, maxRunes int) Line {
	t, cut := cutLine(clean(s), maxRunes)
	return Line{N: n, Text: t, Cut: cut}
}

// prettyLines walks valid JSON text s as json.Indent(dst, s, "", "  ")
// lays it out and returns how many lines that makes. It builds and emits
// line n (from 1) only when want(n) — so a caller that wants few lines
// pays for few; nil want builds none. The lines it emits share one
// growing block (a strings.Builder never changes bytes it has written, so
// each line stays as emitted), not an allocation each.
func prettyLines(s string, want func(n int) bool, emit func(n int, line string)) int {
	var b strings.Builder
	start := 0 // where the line being built starts in b
	n, depth := 1, 0
	building := want != nil && want(1)
	newline := func() {
		if building {
			emit(n, b.String()[start:])
			start = b.Len()
		}
		n++
		building = want != nil && want(n)
		if building {
			for range depth {
				b.WriteString("  ")
			}
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			j := stringClose(s, i+1)
			if building {
				b.WriteString(s[i : j+1])
			}
			i = j
		case '{', '[':
			if building {
				b.WriteByte(c)
			}
			k := i + 1 // an empty container stays on its line
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r') {
				k++
			}
			if k < len(s) && (s[k] == '}' || s[k] == ']') {
				if building {
					b.WriteByte(s[k])
				}
				i = k
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			if building {
				b.WriteByte(c)
			}
		case ',':
			if building {
				b.WriteByte(',')
			}
			newline()
		case ':':
			if building {
				b.WriteString(": ")
			}
		default:
			if building {
				b.WriteByte(c)
			}
		}
	}
	if building {
		emit(n, b.String()[start:])
	}
	return n
}

// stringClose returns the index of the quote closing the JSON string whose
// text starts at i.
func stringClose(s string, i int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s) - 1
		}
		q := i + j
		k := q - 1
		for k >= i && s[k] == '\\' {
			k--
		}
		if (q-1-k)%2 == 0 {
			return q
		}
		i = q + 1
	}
	return len(s) - 1
}
