package views

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxIDLen bounds element ids derived from call ids; longer ones are hashed.
const maxIDLen = 96

// CallElemID derives a card's element id from a call id: "call-" followed by
// the id with every byte outside [A-Za-z0-9-] written as _hh (two lowercase
// hex digits), so the result is a valid id and a plain CSS identifier. A
// call id whose escape would be longer than maxIDLen becomes "call-_h" and a
// 24-hex-digit SHA-256 prefix. A model that reuses a call id gets "__2",
// "__3"… suffixes from the Timeline (cardElemID).
//
// The mapping is injective: in an escape every "_" is followed by two hex
// digits, so "_h" (h is not a hex digit) and "__" never occur in one, and
// the hashed form and the reuse suffix cannot be produced by any escaped
// call id.
func CallElemID(callID string) string {
	var b strings.Builder
	b.Grow(len(callID) + 5)
	b.WriteString("call-")
	const hexdigits = "0123456789abcdef"
	for i := 0; i < len(callID); i++ {
		c := callID[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
			b.WriteByte(hexdigits[c>>4])
			b.WriteByte(hexdigits[c&15])
		}
		if b.Len() > maxIDLen {
			sum := sha256.Sum256([]byte(callID))
			return "call-_h" + hex.EncodeToString(sum[:12])
		}
	}
	return b.String()
}

// cardElemID returns the element id of the nth card (from 1) of callID:
// CallElemID for the first, then a "__n" suffix, which no CallElemID
// contains.
func cardElemID(callID string, n int) string {
	base := CallElemID(callID)
	if n <= 1 {
		return base
	}
	return base + "__" + strconv.Itoa(n)
}
