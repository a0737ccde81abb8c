package views

import (
	"encoding/json"
	"strings"
)

// prettyJSONClip returns JSON text as newClipN(prettyJSON(s), maxLines,
// maxRunes) would, without indenting what the clip leaves out: a large
// value (a 20,000-line result view, its meta) is walked twice — once to
// count its lines, once to build the lines shown — and never held indented
// in full. Text that is not JSON is clipped as it is.
func prettyJSONClip(s string, maxLines, maxRunes int) Clip {
	return jsonClip(s, maxLines, maxRunes, 64<<10)
}

// validJSONClip is prettyJSONClip of text the caller knows to be valid JSON (a
// view core wrote): it is not checked again.
func validJSONClip(s string, maxLines, maxRunes int) Clip {
	return walkJSONClip(s, maxLines, maxRunes, 64<<10)
}

// jsonClip is prettyJSONClip walking values from minSize bytes (smaller ones are
// indented whole, which is as fast for them).
func jsonClip(s string, maxLines, maxRunes, minSize int) Clip {
	if len(s) < minSize || !json.Valid([]byte(s)) {
		return newClipN(prettyJSON(s), maxLines, maxRunes)
	}
	return walkJSONClip(s, maxLines, maxRunes, minSize)
}

// walkJSONClip is jsonClip of valid JSON text s.
//
// It walks s once to count the lines, noting where each of the last few
// starts, then builds the lines shown: the head and middle from the start,
// the tail from where its first line starts — not the omitted lines in
// between, which in a 20,000-line view are most of the text.
func walkJSONClip(s string, maxLines, maxRunes, minSize int) Clip {
	if len(s) < minSize {
		return newClipN(prettyJSON(s), maxLines, maxRunes)
	}
	headN := previewLines / 2
	tailN := previewLines - headN
	starts := make([]prettyMark, tailN) // line n's start at n % tailN
	total := prettyWalk(s, prettyMark{n: 1}, 0, nil, nil, func(m prettyMark) { starts[m.n%tailN] = m })
	if total <= previewLines {
		return newClipN(prettyJSON(s), maxLines, maxRunes)
	}
	if maxLines < previewLines {
		maxLines = previewLines
	}
	middleN := min(maxLines-previewLines, total-previewLines)
	c := Clip{Total: total, Omitted: total - previewLines - middleN,
		Head: lineSlice(headN), Middle: lineSlice(middleN), Tail: lineSlice(tailN)}
	emit := func(n int, line string) {
		l := clipLine(n, line, maxRunes)
		switch {
		case n <= headN:
			c.Head = append(c.Head, l)
		case n <= headN+middleN:
			c.Middle = append(c.Middle, l)
		default:
			c.Tail = append(c.Tail, l)
		}
	}
	if c.Omitted == 0 { // every line is shown
		prettyWalk(s, prettyMark{n: 1}, 0, func(int) bool { return true }, emit, nil)
		return c
	}
	prettyWalk(s, prettyMark{n: 1}, headN+middleN, func(int) bool { return true }, emit, nil)
	prettyWalk(s, starts[(total-tailN+1)%tailN], 0, func(int) bool { return true }, emit, nil)
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
// pays for few; nil want builds none.
func prettyLines(s string, want func(n int) bool, emit func(n int, line string)) int {
	return prettyWalk(s, prettyMark{n: 1}, 0, want, emit, nil)
}

// prettyMark is where line n of the indented layout starts: its depth,
// the closing bracket it opens with (0 for none) and the byte of s the
// walk goes on from.
type prettyMark struct {
	n, depth, at int
	lead         byte
}

// prettyWalk is prettyLines from the start of a line (line 1 at byte 0, or
// a mark an earlier walk reported), up to the end of s or, when stop > 0,
// the end of line stop. It reports the start of every later line to mark
// (when not nil) and returns the number of the last line it reached. The
// lines it emits share one growing block (a strings.Builder never changes
// bytes it has written, so each line stays as emitted), not an allocation
// each.
func prettyWalk(s string, from prettyMark, stop int, want func(n int) bool, emit func(n int, line string), mark func(prettyMark)) int {
	var b strings.Builder
	start := 0 // where the line being built starts in b
	n, depth := from.n, from.depth
	building := want != nil && want(n)
	if building {
		for range depth {
			b.WriteString("  ")
		}
		if from.lead != 0 {
			b.WriteByte(from.lead)
		}
	}
	done := false
	// newline ends line n; the next one starts at byte at of s, opening
	// with the closing bracket lead (0 for none).
	newline := func(at int, lead byte) {
		if building {
			emit(n, b.String()[start:])
			start = b.Len()
		}
		if n == stop {
			done = true
			return
		}
		n++
		if mark != nil {
			mark(prettyMark{n: n, depth: depth, at: at, lead: lead})
		}
		building = want != nil && want(n)
		if building {
			for range depth {
				b.WriteString("  ")
			}
		}
	}
	for i := from.at; i < len(s) && !done; i++ {
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
			newline(i+1, 0)
		case '}', ']':
			depth--
			newline(i+1, c)
			if building {
				b.WriteByte(c)
			}
		case ',':
			if building {
				b.WriteByte(',')
			}
			newline(i+1, 0)
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
	if building && !done {
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
