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
// term's first word can only match where the lower-cased text holds it at
// the start of a run: each such place is found by a substring search and
// checked, with the words after it, run by run as tokenSpans compares
// tokens. The spans it returns are tokenSpans' (unordered).
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
	low := strings.ToLower(text) // ASCII: the same length, the same offsets
	for _, t := range terms {
		if t.Field != FieldText || len(t.Words) == 0 {
			continue
		}
		first := t.Words[0]
		for from := 0; from < len(low); {
			j := strings.Index(low[from:], first)
			if j < 0 {
				break
			}
			at := from + j
			if at > 0 && isASCIIAlnum(low[at-1]) {
				from = at + 1 // inside a run, not at its start
				continue
			}
			if end, ok := asciiPhraseAt(low, at, t); ok {
				spans = append(spans, span{at, end})
			}
			from = asciiRunEnd(low, at) // no other run starts before its end
		}
	}
	return spans, true
}

// asciiPhraseAt reports whether t's words are the terms of the runs of
// low from at (the start of a run) on, one run each, and where the last
// of them ends.
func asciiPhraseAt(low string, at int, t Term) (end int, ok bool) {
	pos := at
	for k, w := range t.Words {
		if k > 0 {
			for pos < len(low) && !isASCIIAlnum(low[pos]) {
				pos++
			}
			if pos == len(low) {
				return 0, false
			}
		}
		e := asciiRunEnd(low, pos)
		term := low[pos:min(e, pos+MaxTermBytes)]
		if k == len(t.Words)-1 && t.Prefix {
			if !strings.HasPrefix(term, w) {
				return 0, false
			}
		} else if term != w {
			return 0, false
		}
		pos, end = e, e
	}
	return end, true
}

// asciiRunEnd returns where the run of letters and digits of low that
// starts at i ends.
func asciiRunEnd(low string, i int) int {
	for i < len(low) && isASCIIAlnum(low[i]) {
		i++
	}
	return i
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
