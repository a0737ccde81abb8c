package views

import (
	"crypto/sha256"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/aymanbagabas/go-udiff"
)

// maxDiffInput bounds the text a diff is computed over; larger changes are
// shown as plain old/new sides.
const maxDiffInput = 256 << 10

// diffLines returns the numbered rows of a change from old to new: context,
// removed and added lines with 3 lines of context, '~' between hunks.
func diffLines(old, new string) []DiffLine {
	if old == "" {
		return sideLines('+', new)
	}
	if len(old)+len(new) > maxDiffInput {
		return append(sideLines('-', old), sideLines('+', new)...)
	}
	if !strings.HasSuffix(old, "\n") {
		old += "\n"
	}
	if !strings.HasSuffix(new, "\n") {
		new += "\n"
	}
	edits := udiff.Lines(old, new)
	u, err := udiff.ToUnifiedDiff("a", "b", old, edits, 3)
	if err != nil {
		return append(sideLines('-', old), sideLines('+', new)...)
	}
	var out []DiffLine
	for hi, h := range u.Hunks {
		if hi > 0 {
			out = append(out, DiffLine{Op: '~'})
		}
		o, n := h.FromLine, h.ToLine
		for _, l := range h.Lines {
			text, _ := cutLine(strings.TrimSuffix(l.Content, "\n"), maxLineRunes)
			switch l.Kind {
			case udiff.Delete:
				out = append(out, DiffLine{Op: '-', Old: o, Text: text})
				o++
			case udiff.Insert:
				out = append(out, DiffLine{Op: '+', New: n, Text: text})
				n++
			default:
				out = append(out, DiffLine{Op: ' ', Old: o, New: n, Text: text})
				o++
				n++
			}
		}
	}
	return out
}

func sideLines(op byte, s string) []DiffLine {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	parts := strings.SplitN(s, "\n", maxLines+1)
	out := make([]DiffLine, 0, len(parts))
	for i, p := range parts {
		if i == maxLines {
			break
		}
		text, _ := cutLine(p, maxLineRunes)
		l := DiffLine{Op: op, Text: text}
		if op == '-' {
			l.Old = i + 1
		} else {
			l.New = i + 1
		}
		out = append(out, l)
	}
	return out
}

func cutTokens(ts []Token, max int) ([]Token, int) {
	n := 0
	for i, t := range ts {
		r := len([]rune(t.Text))
		if n+r > max {
			text, cut := cutLine(t.Text, max-n)
			rest := cut
			for _, u := range ts[i+1:] {
				rest += len([]rune(u.Text))
			}
			out := append(ts[:i:i], Token{Class: t.Class, Text: text})
			return out, rest
		}
		n += r
	}
	return ts, 0
}

// highlight tokenizes lines of source (language lang, else guessed from
// path) into classed tokens, one slice per line, memoized in c (a nil c
// memoizes nothing). Unknown languages give one plain token per line.
func (c *HighlightCache) highlight(lang, path string, lines []string) [][]Token {
	if c == nil {
		return highlight(lang, path, lines)
	}
	key := hlKey(lang, path, lines)
	if toks, ok := c.get(key); ok {
		return toks
	}
	toks := highlight(lang, path, lines)
	c.put(key, toks)
	return toks
}

func highlight(lang, path string, lines []string) [][]Token {
	out := make([][]Token, len(lines))
	var lx chroma.Lexer
	if lang != "" {
		lx = lexers.Get(lang)
	}
	if lx == nil && path != "" {
		lx = lexers.Match(path)
	}
	total := 0
	for _, l := range lines {
		total += len(l)
	}
	if lx == nil || total > 512<<10 {
		for i, l := range lines {
			out[i] = []Token{{Text: l}}
		}
		return out
	}
	lx = chroma.Coalesce(lx)
	it, err := lx.Tokenise(nil, strings.Join(lines, "\n")+"\n")
	if err != nil {
		for i, l := range lines {
			out[i] = []Token{{Text: l}}
		}
		return out
	}
	row := 0
	for tok := it(); tok != chroma.EOF; tok = it() {
		cls := chroma.StandardTypes[tok.Type]
		parts := strings.Split(tok.Value, "\n")
		for pi, p := range parts {
			if pi > 0 {
				row++
			}
			if row >= len(out) {
				break
			}
			if p != "" {
				out[row] = append(out[row], Token{Class: cls, Text: p})
			}
		}
	}
	return out
}

// HighlightCSS returns the stylesheet for highlighted tokens: github's
// token colours, and github-dark's under prefers-color-scheme: dark. Only
// token rules are kept — the page's own CSS styles the code table, its
// background and its line numbers — and a token class the dark style does
// not colour is reset there, so no light colour carries over onto the
// dark background.
func HighlightCSS() string {
	light := tokenRules(styles.Get("github"))
	dark := tokenRules(styles.Get("github-dark"))
	var b strings.Builder
	for _, r := range light {
		b.WriteString(r.css + "\n")
	}
	b.WriteString("@media (prefers-color-scheme: dark) {\n")
	inDark := map[string]bool{}
	for _, r := range dark {
		inDark[r.sel] = true
		b.WriteString(r.css + "\n")
	}
	for _, r := range light {
		if !inDark[r.sel] {
			b.WriteString(r.sel + " { color: inherit; font-weight: inherit; font-style: inherit; background-color: transparent }\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// cssRule is one rule of chroma's stylesheet: its selector and the line.
type cssRule struct{ sel, css string }

// tokenRules returns the token rules of style s: chroma writes one rule a
// line ("/* Name */ .chroma .x { … }"); rules of the wrapper, line tables
// and line numbers are left out.
func tokenRules(s *chroma.Style) []cssRule {
	var b strings.Builder
	_ = chromahtml.New(chromahtml.WithClasses(true)).WriteCSS(&b, s)
	var out []cssRule
	for _, line := range strings.Split(b.String(), "\n") {
		_, rule, ok := strings.Cut(line, "*/ ")
		if !ok {
			continue
		}
		sel, _, ok := strings.Cut(rule, " {")
		cls, isToken := strings.CutPrefix(sel, ".chroma .")
		if !ok || !isToken || chromaStructural[cls] {
			continue
		}
		out = append(out, cssRule{sel: sel, css: rule})
	}
	return out
}

// chromaStructural are chroma's classes of wrappers, line tables and line
// numbers (not tokens).
var chromaStructural = map[string]bool{"lnlinks": true, "lntd": true, "lntable": true, "hl": true,
	"lnt": true, "ln": true, "line": true, "cl": true}

// HighlightCache memoizes the highlighting of code cards, a pure and slow
// function (chroma's lexers are regexp-based): a card is rendered for the
// page, for every live patch and on every resume. A server makes one
// (NewHighlightCache) and hands it to its pages through Reader.Highlights.
// It is safe for concurrent use.
type HighlightCache struct {
	mu  sync.Mutex
	m   map[[32]byte][][]Token
	max int
}

// DefaultHighlightEntries is how many highlighted texts a server's cache
// keeps.
const DefaultHighlightEntries = 2048

// NewHighlightCache returns an empty cache of at most max highlighted
// texts (past it, an arbitrary one is dropped for each new one).
func NewHighlightCache(max int) *HighlightCache {
	return &HighlightCache{m: map[[32]byte][][]Token{}, max: max}
}

func (c *HighlightCache) get(k [32]byte) ([][]Token, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *HighlightCache) put(k [32]byte, v [][]Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for old := range c.m { // evict an arbitrary entry
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}

func hlKey(lang, path string, lines []string) [32]byte {
	h := sha256.New()
	h.Write([]byte(lang))
	h.Write([]byte{0})
	h.Write([]byte(path))
	for _, l := range lines {
		h.Write([]byte{0})
		h.Write([]byte(l))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}
