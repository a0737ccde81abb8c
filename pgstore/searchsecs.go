package pgstore

import (
	"encoding/binary"
	"fmt"

	"prism/core/search"
)

// A document's sections (what its snippet is made from when a query has
// words to mark) are kept with it in search_docs.secs, so a page of hits
// is read without reading and decoding its events. They are stored as
// bytea, each section in turn: its column (one byte), then its label and
// its text, each a uvarint length and the bytes. A card's result's
// sections are appended to its call's (bytea ||), so the column holds the
// sections of the call's event followed by the result's, as
// store.HitSections reads them from the log.

// appendSections appends secs' encoding to b.
func appendSections(b []byte, secs []search.Section) []byte {
	for _, s := range secs {
		b = append(b, byte(s.Col))
		b = binary.AppendUvarint(b, uint64(len(s.Label)))
		b = append(b, s.Label...)
		b = binary.AppendUvarint(b, uint64(len(s.Text)))
		b = append(b, s.Text...)
	}
	return b
}

// encodeSections returns secs' encoding (never nil: a document without
// sections has an empty one, not NULL, which means "not kept").
func encodeSections(secs []search.Section) []byte {
	n := 0
	for _, s := range secs {
		n += 1 + 2*binary.MaxVarintLen32 + len(s.Label) + len(s.Text)
	}
	return appendSections(make([]byte, 0, n), secs)
}

// decodeSections reads what appendSections wrote into dst (reused: its
// length is reset). The labels and texts are substrings of one string
// copied from b, which the caller may then reuse.
func decodeSections(dst []search.Section, b []byte) ([]search.Section, error) {
	return appendDecodedSections(dst[:0], string(b))
}

// appendDecodedSections appends the sections appendSections wrote in s to
// dst; their labels and texts are parts of s. On an error it returns nil
// (dst's elements past its length may have been written).
func appendDecodedSections(dst []search.Section, s string) ([]search.Section, error) {
	for i := 0; i < len(s); {
		col := search.Col(s[i])
		if col < 0 || col >= search.NumCols {
			return nil, fmt.Errorf("stored sections: column %d at byte %d, want 0 to %d", col, i, search.NumCols-1)
		}
		i++
		var parts [2]string
		for k := range parts {
			n, w := uvarint(s[i:])
			if w <= 0 || n > uint64(len(s)-i-w) {
				return nil, fmt.Errorf("stored sections: bad length at byte %d of %d", i, len(s))
			}
			i += w
			parts[k] = s[i : i+int(n)]
			i += int(n)
		}
		dst = append(dst, search.Section{Col: col, Label: parts[0], Text: parts[1]})
	}
	return dst, nil
}

// uvarint is binary.Uvarint of a string's bytes.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s); i++ {
		if i == binary.MaxVarintLen64 {
			return 0, -(i + 1) // overflow
		}
		b := s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, -(i + 1) // overflow
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}
