package search

import (
	"strings"
	"unicode/utf8"
)

// asciiSpans is tokenSpans for an ASCII text and terms of ASCII words,
// without splitting the text into tokens: a snippet of a search with
// words looks for them in every section of every hit, and tokenizing
// whole results was most of a page's snippets. ok is false, and nothing
// is looked for, when the text or a word is not ASCII (tokenSpans then
// does it).
//
// In ASCII text a token is a run of letters and digits, its term the
// run lower-cased and cut to MaxTermBytes (EachToken, Normalize). So a
// term's first word can only match where the text holds it, in any case,
// at the start of a run: each such place is found by a byte search and
// checked, with the words after it, run by run as tokenSpans compares
// tokens. The text is compared as if lower-cased, never copied lower-cased
// (a copy of every section of every hit was a fifth of a page's CPU). The
// spans it returns are tokenSpans' (unordered).
func asciiSpans(text string, terms []Term) (spans []span, ok bool) {
	for _, t := range terms {
		if t.Field != FieldText {
			continue
		}
		for _, w := range t.Words {
			if !isASCIITerm(w) {
				return nil, false
			}
		}
	}
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return nil, false
		}
	}
	for _, t := range terms {
		if t.Field != FieldText || len(t.Words) == 0 {
			continue
		}
		f := newFoldFinder(text, t.Words[0])
		for from := 0; from < len(text); {
			at := f.index(from)
			if at < 0 {
				break
			}
			if at > 0 && isASCIIAlnum(lowerASCII(text[at-1])) {
				from = at + 1 // inside a run, not at its start
				continue
			}
			if end, ok := asciiPhraseAt(text, at, t); ok {
				spans = append(spans, span{at, end})
			}
			from = asciiRunEnd(text, at) // no other run starts before its end
		}
	}
	return spans, true
}

// foldFinder finds a word (lower-case ASCII letters and digits) in an
// ASCII text in any case: the places of its first byte in either case are
// found by strings.IndexByte, each kept until passed (so the text is
// searched once for each), and the rest compared folded.
type foldFinder struct {
	text, w    string
	lo, up     byte // w's first byte and its upper case (the same for a digit)
	nextLo     int  // the next place of lo at or after the last search's start (-1: none; -2: not searched)
	nextUp     int  // the same for up
	searchedLo int  // where nextLo was searched from
	searchedUp int
}

func newFoldFinder(text, w string) foldFinder {
	up := w[0]
	if 'a' <= up && up <= 'z' {
		up -= 'a' - 'A'
	}
	return foldFinder{text: text, w: w, lo: w[0], up: up, nextLo: -2, nextUp: -2}
}

// next returns the first place of c at or after from, reusing the last
// search's answer while it is still ahead.
func (f *foldFinder) next(c byte, from int, cached, searched *int) int {
	if *cached == -1 && *searched <= from {
		return -1
	}
	if *cached < from || *cached == -2 {
		*searched = from
		*cached = strings.IndexByte(f.text[from:], c)
		if *cached >= 0 {
			*cached += from
		}
	}
	return *cached
}

// index returns the first place at or after from where the text holds the
// word in any case, or -1.
func (f *foldFinder) index(from int) int {
	for from+len(f.w) <= len(f.text) {
		at := f.next(f.lo, from, &f.nextLo, &f.searchedLo)
		if f.up != f.lo {
			if u := f.next(f.up, from, &f.nextUp, &f.searchedUp); u >= 0 && (at < 0 || u < at) {
				at = u
			}
		}
		if at < 0 || at+len(f.w) > len(f.text) {
			return -1
		}
		if equalFoldASCII(f.text[at+1:at+len(f.w)], f.w[1:]) {
			return at
		}
		from = at + 1
	}
	return -1
}

// asciiPhraseAt reports whether t's words are the terms of the runs of
// text from at (the start of a run) on, one run each, and where the last
// of them ends.
func asciiPhraseAt(text string, at int, t Term) (end int, ok bool) {
	pos := at
	for k, w := range t.Words {
		if k > 0 {
			for pos < len(text) && !isASCIIAlnum(lowerASCII(text[pos])) {
				pos++
			}
			if pos == len(text) {
				return 0, false
			}
		}
		e := asciiRunEnd(text, pos)
		term := text[pos:min(e, pos+MaxTermBytes)]
		if k == len(t.Words)-1 && t.Prefix {
			if len(term) < len(w) || !equalFoldASCII(term[:len(w)], w) {
				return 0, false
			}
		} else if len(term) != len(w) || !equalFoldASCII(term, w) {
			return 0, false
		}
		pos, end = e, e
	}
	return end, true
}

// asciiRunEnd returns where the run of letters and digits of text that
// starts at i ends.
func asciiRunEnd(text string, i int) int {
	for i < len(text) && isASCIIAlnum(lowerASCII(text[i])) {
		i++
	}
	return i
}

// lowerASCII returns c lower-cased (ASCII letters; any other byte as it
// is).
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFoldASCII reports whether s lower-cased is w (of the same length,
// lower case).
func equalFoldASCII(s, w string) bool {
	for i := 0; i < len(w); i++ {
		if lowerASCII(s[i]) != w[i] {
			return false
		}
	}
	return true
}

// isASCIIAlnum reports whether c is a lower-case ASCII letter or a digit.
func isASCIIAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// isASCIITerm reports whether w is a term an ASCII text can have: one to
// MaxTermBytes lower-case ASCII letters and digits.
func isASCIITerm(w string) bool {
	if w == "" || len(w) > MaxTermBytes {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !isASCIIAlnum(w[i]) {
			return false
		}
	}
	return true
}
