package views

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxIDLen bounds element ids derived from call ids; longer ones are hashed.
const maxIDLen = 96

// CallElemID derives a card's element id from a call id: "call-" followed by
// the id with every byte outside [A-Za-z0-9-] written as _hh (so the mapping
// is injective, and the result is a valid id and a plain CSS identifier). A
// call id whose escape would be longer than maxIDLen becomes "call-h" and a
// SHA-256 prefix. A model that reuses a call id gets "--2", "--3"… suffixes
// from the Timeline.
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
			return "call-h" + hex.EncodeToString(sum[:12])
		}
	}
	return b.String()
}
