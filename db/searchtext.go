package db

import (
	"fmt"
	"strconv"

	"prism/core/search"
)

// A document's text (search_text.secs, migration 0019) is the sections
// its events contribute (core/search.Extract), in seq order, kept when it
// is filed: a search with words makes its page's snippets from them
// instead of reading and decoding each hit's events. Each section is
// written as its column (one digit), its label, a space, its text's length
// in bytes (decimal), a colon and its text. The encoding of a list is the
// concatenation of its sections' — a card's result's sections are added to
// its call's by appending (appendTextSQL) — and is valid UTF-8 when the
// texts are, so it is stored as TEXT.

// appendSections appends the text encoding of secs to b.
func appendSections(b []byte, secs []search.Section) []byte {
	for _, s := range secs {
		b = append(b, byte('0'+s.Col))
		b = append(b, s.Label...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(s.Text)), 10)
		b = append(b, ':')
		b = append(b, s.Text...)
	}
	return b
}

// encodeSections is the stored text of a document of the sections lists
// (in order): nil (no row; its snippet is made from its events) when it
// has none.
func encodeSections(lists ...[]search.Section) any {
	var b []byte
	for _, secs := range lists {
		b = appendSections(b, secs)
	}
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// sectionLabel returns label as one of the labels core/search writes (no
// copy of b), or a copy of it.
func sectionLabel(b []byte) string {
	switch string(b) {
	case "text":
		return "text"
	case "reasoning":
		return "reasoning"
	case "tool":
		return "tool"
	case "arguments":
		return "arguments"
	case "result":
		return "result"
	case "error":
		return "error"
	case "title":
		return "title"
	case "cwd":
		return "cwd"
	case "failure":
		return "failure"
	}
	return string(b)
}

// decodeSections appends the sections encoded in b (appendSections) to
// secs; each text is a copy, b may be reused.
func decodeSections(secs []search.Section, b []byte) ([]search.Section, error) {
	for i := 0; i < len(b); {
		start := i
		col := search.Col(b[i] - '0')
		if col < 0 || col >= search.NumCols {
			return nil, fmt.Errorf("stored text: column %q at byte %d", b[i], start)
		}
		i++
		j := i
		for j < len(b) && b[j] != ' ' {
			j++
		}
		label := b[i:j]
		i = j + 1
		n := 0
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			n = n*10 + int(b[i]-'0')
			if n > len(b) {
				break
			}
		}
		if i >= len(b) || b[i] != ':' || n > len(b)-i-1 {
			return nil, fmt.Errorf("stored text: section at byte %d is cut short", start)
		}
		i++
		secs = append(secs, search.Section{Col: col, Label: sectionLabel(label), Text: string(b[i : i+n])})
		i += n
	}
	return secs, nil
}
