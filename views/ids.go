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

// CallRefs returns the call ids a hand-written reference to a call may
// mean, the likeliest first: ref as the log spells it; for "call-…" the
// call whose card's element id it is (CallElemID's escape undone, a reuse
// suffix dropped), then what follows "call-" as is — the fragment a reader
// writes from the log's call id (#call-call_c90599a4_12).
func CallRefs(ref string) []string {
	refs := []string{ref}
	rest, ok := strings.CutPrefix(ref, "call-")
	if !ok || rest == "" {
		return refs
	}
	if i := strings.Index(rest, "__"); i >= 0 {
		rest2 := rest[:i]
		if _, err := strconv.Atoi(rest[i+2:]); err == nil {
			rest = rest2
		}
	}
	if id, ok := unescapeCallID(rest); ok && id != ref {
		refs = append(refs, id)
	}
	if r := ref[len("call-"):]; r != refs[len(refs)-1] {
		refs = append(refs, r)
	}
	return refs
}

// unescapeCallID undoes CallElemID's escape of a call id (without its
// "call-"): false when s is not such an escape.
func unescapeCallID(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+3 > len(s) {
			return "", false
		}
		v, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil || strings.ToLower(s[i+1:i+3]) != s[i+1:i+3] {
			return "", false
		}
		b.WriteByte(v[0])
		i += 2
	}
	return b.String(), true
}

// CardsOfRef returns the cards of the call a hand-written reference names
// (CallRefs): a call id as the log spells it, a card's element id, or
// "call-" followed by the call id.
func (t *Timeline) CardsOfRef(ref string) []*Card {
	if c := t.Card(ref); c != nil {
		return t.CardsByCallID(c.CallID)
	}
	for _, id := range CallRefs(ref) {
		if cards := t.CardsByCallID(id); len(cards) > 0 {
			return cards
		}
	}
	return nil
}
