package search

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SnippetRunes is about how many characters a snippet shows.
const SnippetRunes = 180

// snippetLead is how many characters a snippet shows before its first match.
const snippetLead = 60

// Snippet is the excerpt of a hit: one line of text around its first match,
// and where the matches are in it. Text is plain text, not markup: a page
// escapes it and draws the highlights from Highlights, so no text can forge
// one.
type Snippet struct {
	// Label names the section the text comes from (text, reasoning,
	// arguments, result, error, title, cwd, failure, tool).
	Label string `json:"label"`
	// Text is the excerpt: white space collapsed to single spaces, control
	// and bidirectional-override characters replaced by U+FFFD, "…" where
	// it was cut.
	Text string `json:"snippet"`
	// Highlights are the matches in Text as [start, end) offsets counted in
	// characters (Unicode code points), in order and not overlapping.
	Highlights [][2]int `json:"highlights"`
}

// Parts splits the snippet into runs of plain and highlighted text, for a
// template to render (each run escaped, highlighted runs marked).
func (s Snippet) Parts() []SnippetPart {
	runes := []rune(s.Text)
	var out []SnippetPart
	at := 0
	for _, h := range s.Highlights {
		if h[0] < at || h[1] > len(runes) || h[0] >= h[1] {
			continue
		}
		if h[0] > at {
			out = append(out, SnippetPart{Text: string(runes[at:h[0]])})
		}
		out = append(out, SnippetPart{Text: string(runes[h[0]:h[1]]), Mark: true})
		at = h[1]
	}
	if at < len(runes) {
		out = append(out, SnippetPart{Text: string(runes[at:])})
	}
	return out
}

// SnippetPart is a run of a snippet's text; Mark is set on a match.
type SnippetPart struct {
	Text string
	Mark bool
}

type span struct{ start, end int } // byte offsets

// Matches returns the byte ranges of text where any of terms matches (text
// terms only: a word, a phrase's words in a row, a prefix), merged and in
// order.
func Matches(text string, terms []Term) [][2]int {
	var out [][2]int
	for _, s := range matchSpans(text, terms) {
		out = append(out, [2]int{s.start, s.end})
	}
	return out
}

func matchSpans(text string, terms []Term) []span {
	if len(terms) == 0 || text == "" {
		return nil
	}
	spans, ok := asciiSpans(text, terms)
	if !ok {
		spans = tokenSpans(text, terms)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	merged := spans[:0]
	for _, s := range spans {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// tokenSpans returns where terms match text, unordered: text split into
// its tokens (Tokens), each term's words looked for in a row.
func tokenSpans(text string, terms []Term) []span {
	toks := Tokens(text)
	var spans []span
	for _, t := range terms {
		n := len(t.Words)
		if t.Field != FieldText || n == 0 {
			continue
		}
		for i := 0; i+n <= len(toks); i++ {
			ok := true
			for k, w := range t.Words {
				got := toks[i+k].Term
				if k == n-1 && t.Prefix {
					ok = strings.HasPrefix(got, w)
				} else {
					ok = got == w
				}
				if !ok {
					break
				}
			}
			if ok {
				spans = append(spans, span{toks[i].Start, toks[i+n-1].End})
			}
		}
	}
	return spans
}

// MakeSnippet builds a hit's snippet from its document's sections: the
// section with the most matches of terms (the query's Highlights), around
// its first match. When nothing matches (a query of operators only), it is
// the start of the section that says most: a failure's result, else the
// text or arguments, else the first.
func MakeSnippet(secs []Section, terms []Term) Snippet {
	best, bestSpans := -1, []span(nil)
	for i, s := range secs {
		if sp := matchSpans(s.Text, terms); len(sp) > len(bestSpans) {
			best, bestSpans = i, sp
		}
	}
	if best < 0 {
		best = fallbackSection(secs)
	}
	if best < 0 {
		return Snippet{Highlights: [][2]int{}}
	}
	sec := secs[best]
	return window(sec.Label, sec.Text, bestSpans)
}

func fallbackSection(secs []Section) int {
	failed := false
	for _, s := range secs {
		failed = failed || s.Col == ColErr
	}
	prefs := []Col{ColBody, ColMore, ColName, ColErr}
	if failed {
		prefs = []Col{ColMore, ColBody, ColErr, ColName}
	}
	for _, c := range prefs {
		for i, s := range secs {
			if s.Col == c && strings.TrimSpace(s.Text) != "" {
				return i
			}
		}
	}
	return -1
}

func window(label, text string, spans []span) Snippet {
	start := 0
	if len(spans) > 0 {
		start = backRunes(text, spans[0].start, snippetLead)
		if start > 0 {
			// Start on a word boundary when one is near.
			for i, r := range text[start:spans[0].start] {
				if i > 24 {
					break
				}
				if unicode.IsSpace(r) {
					start += i + utf8.RuneLen(r)
					break
				}
			}
		}
	}
	// The excerpt's characters: SnippetRunes, a few more to end a match
	// and the two ellipses (one allocation, not one per doubling).
	runes := make([]rune, 0, SnippetRunes+8)
	if start > 0 {
		runes = append(runes, '…')
	}
	hls := [][2]int{}
	si := 0
	for si < len(spans) && spans[si].end <= start {
		si++
	}
	hl, wrote, space := -1, false, false
	i := start
	for i < len(text) {
		if len(runes) >= SnippetRunes && hl < 0 {
			break
		}
		if si < len(spans) && i == spans[si].start {
			if space {
				runes, space = append(runes, ' '), false
			}
			hl = len(runes)
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if size == 1 && r == utf8.RuneError || !unicode.IsSpace(r) {
			if space {
				runes, space = append(runes, ' '), false
			}
			runes, wrote = append(runes, safeRune(r)), true
		} else if wrote {
			space = true
		}
		i += size
		if hl >= 0 && i >= spans[si].end {
			hls = append(hls, [2]int{hl, len(runes)})
			hl = -1
			si++
		}
	}
	if hl >= 0 {
		hls = append(hls, [2]int{hl, len(runes)})
	}
	if strings.TrimSpace(text[i:]) != "" {
		// Cut at a word boundary when one is near (never inside a match).
		floor := len(runes) - 20
		if n := len(hls); n > 0 {
			floor = max(floor, hls[n-1][1])
		}
		for k := len(runes) - 1; k > floor && k > 0; k-- {
			if runes[k] == ' ' {
				runes = runes[:k]
				break
			}
		}
		runes = append(runes, '…')
	}
	return Snippet{Label: label, Text: string(runes), Highlights: hls}
}

// backRunes returns the byte offset n characters before at (or 0).
func backRunes(s string, at, n int) int {
	for n > 0 && at > 0 {
		_, size := utf8.DecodeLastRuneInString(s[:at])
		at -= size
		n--
	}
	return at
}

// safeRune replaces control characters, bidirectional overrides and
// invalid bytes, which would garble or disguise a one-line excerpt.
func safeRune(r rune) rune {
	switch {
	case r == utf8.RuneError, unicode.IsControl(r):
		return '\uFFFD'
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return '\uFFFD'
	}
	return r
}
