package db

import (
	"fmt"
	"slices"
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

// decode appends the sections of the stored texts bs (in order) to secs.
// Their texts are parts of one string made for the call: bs and the
// decoder's buffer may be reused.
func (d *textDecoder) decode(secs []search.Section, bs ...[]byte) ([]search.Section, error) {
	whole := d.buf[:0]
	for _, b := range bs {
		if len(b) == 0 {
			continue
		}
		switch b[0] {
		case textRaw:
			whole = append(whole, b[1:]...)
		case textS2:
			n, err := s2.DecodedLen(b[1:])
			if err != nil {
				return nil, fmt.Errorf("stored text: %w", err)
			}
			at := len(whole)
			whole = slices.Grow(whole, n)[:at+n]
			out, err := s2.Decode(whole[at:at+n:at+n], b[1:])
			if err != nil {
				return nil, fmt.Errorf("stored text: %w", err)
			}
			if len(out) != n {
				return nil, fmt.Errorf("stored text: %d bytes decoded, %d announced", len(out), n)
			}
			if n > 0 && &out[0] != &whole[at] {
				copy(whole[at:], out)
			}
		default:
			return nil, fmt.Errorf("stored text: unknown encoding %d", b[0])
		}
	}
	d.buf = whole[:0]
	return decodeSections(secs, string(whole))
}

// sectionLabel returns label as one of the labels core/search writes, or
// label itself.
func sectionLabel(label string) string {
	switch label {
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
	return label
}

// decodeSections appends the sections written out in b (appendSections)
// to secs, their texts parts of b.
func decodeSections(secs []search.Section, b string) ([]search.Section, error) {
	for i := 0; i < len(b); {
		start := i
		col := search.Col(b[i] - '0')
		if col < 0 || col >= search.NumCols {
			return nil, fmt.Errorf("stored text: column %q at byte %d", b[i], start)
		}
		var label, text string
		var ok bool
		if label, i, ok = lengthPrefixed(b, i+1); !ok {
			return nil, fmt.Errorf("stored text: the label of the section at byte %d is cut short", start)
		}
		if text, i, ok = lengthPrefixed(b, i); !ok {
			return nil, fmt.Errorf("stored text: the text of the section at byte %d is cut short", start)
		}
		secs = append(secs, search.Section{Col: col, Label: sectionLabel(label), Text: text})
	}
	return secs, nil
}

// lengthPrefixed reads from b at i a length (decimal), a colon and that
// many bytes; it returns them and where they end (ok false when b does
// not hold them).
func lengthPrefixed(b string, i int) (v string, end int, ok bool) {
	n := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		if n = n*10 + int(b[i]-'0'); n > len(b) {
			return "", 0, false
		}
	}
	if i >= len(b) || b[i] != ':' || n > len(b)-i-1 {
		return "", 0, false
	}
	i++
	return b[i : i+n], i + n, true
}
