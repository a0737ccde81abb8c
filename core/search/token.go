package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxTermBytes bounds a term: a longer word (a base64 blob, a minified
// line) is indexed, and looked up, by its first MaxTermBytes bytes.
const MaxTermBytes = 64

// Token is one term of a text and where it came from.
type Token struct {
	// Term is the normalized word: lower case, compatibility forms folded
	// (full-width letters, ligatures), the diacritics of Latin, Greek and
	// Cyrillic letters removed; at most MaxTermBytes bytes, and only lower
	// case ASCII letters, ASCII digits and non-ASCII characters.
	Term string
	// Start and End are the byte offsets of the word in the text.
	Start, End int
}

// Tokens splits text into terms; see EachToken.
func Tokens(text string) []Token {
	var out []Token
	EachToken(text, func(t Token) bool {
		out = append(out, t)
		return true
	})
	return out
}

// EachToken calls fn with each term of text in order until fn returns
// false. Index and query split text the same way:
//
//   - a word is a run of letters, digits and combining marks; everything
//     else separates words, so code identifiers and paths are sequences of
//     words (greet_test.go is greet, test, go; fmt.Sprintf is fmt, sprintf)
//     and a query for the whole form looks for that sequence;
//   - in scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao,
//     Khmer, Myanmar) each character, with its combining marks, is a word of
//     its own, so a query for 数据库 looks for those three characters in a row;
//   - words are normalized (see Token.Term); a word that normalizes to
//     nothing is skipped.
func EachToken(text string, fn func(Token) bool) {
	start := -1 // start of the current word run
	solo := false
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		s := start
		start = -1
		if term := Normalize(text[s:end]); term != "" {
			return fn(Token{Term: term, Start: s, End: end})
		}
		return true
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				if start >= 0 && solo {
					if !flush(i) {
						return
					}
				}
				if start < 0 {
					start, solo = i, false
				}
			} else if !flush(i) {
				return
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if !flush(i) {
				return
			}
		case unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me):
			// A mark continues the word (or the character) before it.
			if start < 0 {
				start, solo = i, false
			}
		case isSolo(r):
			if !flush(i) {
				return
			}
			start, solo = i, true
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.No, r) || unicode.Is(unicode.Nl, r):
			if start >= 0 && solo {
				if !flush(i) {
					return
				}
			}
			if start < 0 {
				start, solo = i, false
			}
		default:
			if !flush(i) {
				return
			}
		}
		i += size
	}
	flush(len(text))
}

// soloScripts are the scripts written without spaces between words.
var soloScripts = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

func isSolo(r rune) bool {
	if r < 0x0E00 {
		return false
	}
	return unicode.In(r, soloScripts...)
}

// Normalize returns the term of one word (see Token.Term); "" when nothing
// searchable is left.
func Normalize(word string) string {
	ascii := true
	for i := 0; i < len(word); i++ {
		if word[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return cutTerm(asciiTerm(word))
	}
	var b strings.Builder
	b.Grow(len(word))
	stripMarks := false
	for _, r := range norm.NFKD.String(word) {
		switch {
		case unicode.Is(unicode.Mn, r):
			if stripMarks {
				continue
			}
		case r < utf8.RuneSelf:
			stripMarks = true
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			} else if !('a' <= r && r <= 'z' || '0' <= r && r <= '9') {
				continue // compatibility forms can decompose to punctuation
			}
		default:
			stripMarks = unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic)
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return cutTerm(norm.NFC.String(b.String()))
}

// asciiTerm lower-cases an ASCII word made of letters and digits, and
// drops anything else.
func asciiTerm(w string) string {
	lower := true
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			lower = false
			break
		}
	}
	if lower {
		return w
	}
	b := make([]byte, 0, len(w))
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b = append(b, c)
		}
	}
	return string(b)
}

// cutTerm cuts a term to MaxTermBytes on a character boundary.
func cutTerm(t string) string {
	if len(t) <= MaxTermBytes {
		return t
	}
	i := MaxTermBytes
	for i > 0 && !utf8.RuneStart(t[i]) {
		i--
	}
	return t[:i]
}
