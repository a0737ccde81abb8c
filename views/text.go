package views

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Display bounds. Cards never carry more than maxLines lines of at most
// maxLineRunes runes each; the call page allows more (see CallPage).
const (
	// previewLines is how many lines a collapsed body shows (head and tail).
	previewLines = 12
	// maxLines is how many lines an expanded card body shows at most.
	maxLines = 400
	// maxLineRunes is the longest line a card shows before cutting it.
	maxLineRunes = 1000
	// maxTextBytes bounds free text (messages, markdown) in the transcript.
	maxTextBytes = 256 << 10
)

// clean makes text safe to carry in HTML and in SSE data lines: invalid
// UTF-8 becomes U+FFFD, CR and CRLF become LF (a bare CR would split an SSE
// line), ANSI escape sequences are dropped, other C0 controls except tab and
// newline become U+FFFD, and invisible format characters — bidi controls and
// zero-width characters (the Trojan Source class, CVE-2021-42574) — become
// visible markers such as "<U+202E>" instead of being obeyed by the browser.
func clean(s string) string {
	ok := utf8.ValidString(s)
	if ok {
		needs := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				needs = true
				break
			}
			if c >= utf8.RuneSelf && invisibleLead(c) {
				if r, _ := utf8.DecodeRuneInString(s[i:]); invisible(r) {
					needs = true
					break
				}
			}
		}
		if !needs {
			return s
		}
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b.WriteByte('\n')
		case c == 0x1b:
			i = skipEscape(s, i)
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			b.WriteString("\uFFFD")
		case c >= utf8.RuneSelf && invisibleLead(c):
			r, w := utf8.DecodeRuneInString(s[i:])
			if invisible(r) {
				b.WriteString(controlMarker(r))
			} else {
				b.WriteString(s[i : i+w])
			}
			i += w - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// invisibleNames names the invisible format characters clean shows as
// markers: every bidi control (embeddings, overrides, isolates and marks)
// and the zero-width and other invisible characters text can hide behind.
var invisibleNames = map[rune]string{
	0x00AD: "SOFT HYPHEN",
	0x061C: "ARABIC LETTER MARK",
	0x180E: "MONGOLIAN VOWEL SEPARATOR",
	0x200B: "ZERO WIDTH SPACE",
	0x200C: "ZERO WIDTH NON-JOINER",
	0x200D: "ZERO WIDTH JOINER",
	0x200E: "LEFT-TO-RIGHT MARK",
	0x200F: "RIGHT-TO-LEFT MARK",
	0x202A: "LEFT-TO-RIGHT EMBEDDING",
	0x202B: "RIGHT-TO-LEFT EMBEDDING",
	0x202C: "POP DIRECTIONAL FORMATTING",
	0x202D: "LEFT-TO-RIGHT OVERRIDE",
	0x202E: "RIGHT-TO-LEFT OVERRIDE",
	0x2060: "WORD JOINER",
	0x2061: "FUNCTION APPLICATION",
	0x2062: "INVISIBLE TIMES",
	0x2063: "INVISIBLE SEPARATOR",
	0x2064: "INVISIBLE PLUS",
	0x2066: "LEFT-TO-RIGHT ISOLATE",
	0x2067: "RIGHT-TO-LEFT ISOLATE",
	0x2068: "FIRST STRONG ISOLATE",
	0x2069: "POP DIRECTIONAL ISOLATE",
	0xFEFF: "ZERO WIDTH NO-BREAK SPACE",
}

// invisible reports whether r is a character clean shows as a visible
// marker instead of passing it to the browser.
func invisible(r rune) bool {
	_, ok := invisibleNames[r]
	return ok
}

// invisibleLead reports whether c can start the UTF-8 encoding of an
// invisible rune (a cheap filter before decoding).
func invisibleLead(c byte) bool {
	switch c {
	case 0xC2, 0xD8, 0xE1, 0xE2, 0xEF:
		return true
	}
	return false
}

// controlMarker is the visible stand-in for an invisible character.
func controlMarker(r rune) string { return fmt.Sprintf("<U+%04X>", r) }

// skipEscape returns the index of the last byte of the escape sequence that
// starts at s[i] (ESC).
func skipEscape(s string, i int) int {
	if i+1 >= len(s) {
		return i
	}
	switch s[i+1] {
	case '[': // CSI: parameters, then a final byte in 0x40–0x7e
		for j := i + 2; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j
			}
		}
		return len(s) - 1
	case ']': // OSC: up to BEL or ST
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 1
			}
		}
		return len(s) - 1
	}
	if s[i+1] >= utf8.RuneSelf { // not a two-byte escape: drop ESC alone, keep the rune
		return i
	}
	return i + 1
}

// capBytes cuts s to at most n bytes on a rune boundary and reports whether
// it cut.
func capBytes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// Line is one displayed line of a body, cut to maxLineRunes.
type Line struct {
	N    int    // 1-based number within the text (or the file's own number)
	Text string // cleaned and cut
	Cut  int    // runes cut from the end (0 = whole line)
}

// Clip is a bounded, collapsible view of a multi-line text: Head and Tail
// show when collapsed, Middle when expanded, and Omitted lines are never
// shown in the card.
type Clip struct {
	Head, Middle, Tail []Line
	Total              int // lines in the whole text
	Omitted            int // lines neither collapsed nor expanded view shows
	Empty              bool
	// Full, when set, links the call's full output from the clip's
	// count when the clip does not show every line.
	Full *Downloads
}

// Cut reports whether the collapsed clip leaves lines out.
func (c *Clip) Cut() bool { return c.Total > c.Collapsed() || c.Omitted > 0 }

// Shown returns how many lines the expanded view shows.
func (c *Clip) Shown() int { return len(c.Head) + len(c.Middle) + len(c.Tail) }

// Collapsed returns how many lines the collapsed view shows.
func (c *Clip) Collapsed() int { return len(c.Head) + len(c.Tail) }

// Text returns the shown lines joined, for copy buttons.
func (c *Clip) Text() string {
	var b strings.Builder
	for _, part := range [][]Line{c.Head, c.Middle, c.Tail} {
		for _, l := range part {
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cutLine bounds one line to max runes.
func cutLine(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n, i := 0, 0
	for i < len(s) && n < max {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		n++
	}
	if i >= len(s) {
		return s, 0
	}
	return s[:i], utf8.RuneCountInString(s[i:])
}

// newClip splits text into lines and bounds it for a card: at most
// previewLines collapsed (half head, half tail), at most maxLines expanded,
// each line cut to maxLineRunes.
func newClip(text string, maxLines int) Clip { return newClipN(text, maxLines, maxLineRunes) }

// newClipN is newClip with a line length bound of maxRunes.
func newClipN(text string, maxLines, maxRunes int) Clip {
	if text == "" {
		return Clip{Empty: true}
	}
	text = clean(text)
	text = strings.TrimSuffix(text, "\n")
	// Count lines without splitting a huge text into a huge slice.
	total := strings.Count(text, "\n") + 1
	c := Clip{Total: total}
	mk := func(n int, s string) Line {
		t, cut := cutLine(s, maxRunes)
		return Line{N: n, Text: t, Cut: cut}
	}
	if total <= previewLines {
		for i, s := range strings.Split(text, "\n") {
			c.Head = append(c.Head, mk(i+1, s))
		}
		return c
	}
	if maxLines < previewLines {
		maxLines = previewLines
	}
	headN := previewLines / 2
	tailN := previewLines - headN
	middleN := min(maxLines-previewLines, total-previewLines)
	c.Omitted = total - previewLines - middleN
	c.Head, c.Middle, c.Tail = lineSlice(headN), lineSlice(middleN), lineSlice(tailN)
	// Walk the first headN+middleN lines.
	rest := text
	for i := 1; i <= headN+middleN; i++ {
		line, after, _ := strings.Cut(rest, "\n")
		rest = after
		if i <= headN {
			c.Head = append(c.Head, mk(i, line))
		} else {
			c.Middle = append(c.Middle, mk(i, line))
		}
	}
	// The last tailN lines.
	end := text
	tail := make([]string, 0, tailN)
	for range tailN {
		k := strings.LastIndexByte(end, '\n')
		tail = append(tail, end[k+1:])
		if k < 0 {
			break
		}
		end = end[:k]
	}
	for j := len(tail) - 1; j >= 0; j-- {
		c.Tail = append(c.Tail, mk(total-j, tail[j]))
	}
	return c
}

// lineSlice is room for n lines of a clip (nil for none, as appending
// nothing leaves it).
func lineSlice(n int) []Line {
	if n <= 0 {
		return nil
	}
	return make([]Line, 0, n)
}

// CompactCount formats n for a narrow column: "950", "12.3k", "1.1k",
// "123k", "4.5M" (three significant digits at most, rounded).
func CompactCount(n int64) string {
	if n < 0 {
		return "-" + CompactCount(-n)
	}
	if n < 1000 {
		return strconv.FormatInt(n, 10)
	}
	v, units := float64(n)/1000, []string{"k", "M", "G"}
	for i := 0; ; i, v = i+1, v/1000 {
		if r := math.Round(v*10) / 10; r < 100 {
			return strconv.FormatFloat(r, 'f', -1, 64) + units[i] // 1–99.9
		}
		if r := math.Round(v); r < 1000 || i == len(units)-1 {
			return strconv.FormatFloat(r, 'f', -1, 64) + units[i] // 100–999
		}
	}
}

// Count formats n with thousands separators.
func Count(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + Count(-n)
	}
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// plural returns "1 line" / "2 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Count(n) + " " + many
}

// firstLine returns the first non-empty line of s, cut to max runes.
func firstLine(s string, max int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			t, cut := cutLine(l, max)
			if cut > 0 {
				t += "…"
			}
			return t
		}
	}
	return ""
}
