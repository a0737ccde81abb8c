package db

import (
	"fmt"
	"strconv"

	"github.com/klauspost/compress/s2"

	"prism/core/search"
)

// A document's text (search_text, migration 0019) is the sections its
// events contribute (core/search.Extract), in seq order, kept when it is
// filed: a search with words makes its page's snippets from them instead
// of reading and decoding each hit's events. A list of sections is written
// section after section — its column (one digit), then its label and its
// text, each as its length in bytes (decimal), a colon and its bytes — then, when that
// makes it smaller, compressed (S2, klauspost/compress): a first byte says
// which (textRaw, textS2).
const (
	textRaw = 0
	textS2  = 1
)

// appendSections appends the sections secs, written out, to b.
func appendSections(b []byte, secs []search.Section) []byte {
	for _, s := range secs {
		b = append(b, byte('0'+s.Col))
		b = strconv.AppendInt(b, int64(len(s.Label)), 10)
		b = append(b, ':')
		b = append(b, s.Label...)
		b = strconv.AppendInt(b, int64(len(s.Text)), 10)
		b = append(b, ':')
		b = append(b, s.Text...)
	}
	return b
}

// encodeText returns the stored text of sections secs: nil (NULL) when
// there are none.
func encodeText(secs []search.Section) any {
	if len(secs) == 0 {
		return nil
	}
	raw := appendSections([]byte{textRaw}, secs)
	if n := s2.MaxEncodedLen(len(raw) - 1); n > 0 {
		dst := make([]byte, 1+n)
		if c := s2.Encode(dst[1:], raw[1:]); 1+len(c) < len(raw) {
			dst[0] = textS2
			return dst[:1+len(c)]
		}
	}
	return raw
}

// textDecoder decodes stored texts (encodeText), its buffer reused from one
// to the next.
type textDecoder struct{ buf []byte }

// decode appends the sections of the stored text b to secs; each text is
// a copy (b and the decoder's buffer may be reused).
func (d *textDecoder) decode(secs []search.Section, b []byte) ([]search.Section, error) {
	if len(b) == 0 {
		return secs, nil
	}
	switch b[0] {
	case textRaw:
		b = b[1:]
	case textS2:
		n, err := s2.DecodedLen(b[1:])
		if err != nil {
			return nil, fmt.Errorf("stored text: %w", err)
		}
		if cap(d.buf) < n {
			d.buf = make([]byte, n)
		}
		if b, err = s2.Decode(d.buf[:cap(d.buf)], b[1:]); err != nil {
			return nil, fmt.Errorf("stored text: %w", err)
		}
	default:
		return nil, fmt.Errorf("stored text: unknown encoding %d", b[0])
	}
	return decodeSections(secs, b)
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

// decodeSections appends the sections written out in b (appendSections)
// to secs, each text a copy.
func decodeSections(secs []search.Section, b []byte) ([]search.Section, error) {
	for i := 0; i < len(b); {
		start := i
		col := search.Col(b[i] - '0')
		if col < 0 || col >= search.NumCols {
			return nil, fmt.Errorf("stored text: column %q at byte %d", b[i], start)
		}
		var label, text []byte
		var ok bool
		if label, i, ok = lengthPrefixed(b, i+1); !ok {
			return nil, fmt.Errorf("stored text: the label of the section at byte %d is cut short", start)
		}
		if text, i, ok = lengthPrefixed(b, i); !ok {
			return nil, fmt.Errorf("stored text: the text of the section at byte %d is cut short", start)
		}
		secs = append(secs, search.Section{Col: col, Label: sectionLabel(label), Text: string(text)})
	}
	return secs, nil
}

// lengthPrefixed reads from b at i a length (decimal), a colon and that
// many bytes; it returns them and where they end (ok false when b does
// not hold them).
func lengthPrefixed(b []byte, i int) (v []byte, end int, ok bool) {
	n := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		if n = n*10 + int(b[i]-'0'); n > len(b) {
			return nil, 0, false
		}
	}
	if i >= len(b) || b[i] != ':' || n > len(b)-i-1 {
		return nil, 0, false
	}
	i++
	return b[i : i+n], i + n, true
}
