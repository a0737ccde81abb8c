package redact

// keywords finds every rule keyword in a text in one pass: a table of the
// first two bytes rejects almost every position with one lookup, and the
// few candidates are compared in full. Folded keywords (lower-case ASCII)
// match whatever the case of the text.
type keywords struct {
	list []keyword
	// pair[b0<<8|b1] is set when some keyword starts with bytes b0 b1 (both
	// cases of a folded keyword's letters).
	pair []bool
	// byFirst lists the keywords that may start with a byte.
	byFirst [256][]int
}

type keyword struct {
	text string
	fold bool
}

// hit is one keyword occurrence.
type kwHit struct{ p, kw int }

// add registers a keyword and returns its index (the same for a repeat).
func (k *keywords) add(text string, fold bool) int {
	for i, w := range k.list {
		if w.text == text && w.fold == fold {
			return i
		}
	}
	k.list = append(k.list, keyword{text, fold})
	return len(k.list) - 1
}

// build fills the lookup tables; call it after the last add.
func (k *keywords) build() {
	k.pair = make([]bool, 1<<16)
	for i, w := range k.list {
		for _, b0 := range variants(w.text[0], w.fold) {
			k.byFirst[b0] = append(k.byFirst[b0], i)
			if len(w.text) == 1 {
				for b1 := range 256 {
					k.pair[int(b0)<<8|b1] = true
				}
				continue
			}
			for _, b1 := range variants(w.text[1], w.fold) {
				k.pair[int(b0)<<8|int(b1)] = true
			}
		}
	}
}

func variants(c byte, fold bool) []byte {
	if fold && c >= 'a' && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}

// find appends the occurrences in s to out, in order of position; with
// first it stops at the first one.
func find[T ~string | ~[]byte](k *keywords, s T, out []kwHit, first bool) []kwHit {
	if len(s) == 0 {
		return out
	}
	n := len(s)
	for i := 0; i < n; i++ {
		b0 := s[i]
		if len(k.byFirst[b0]) == 0 {
			continue
		}
		b1 := 0
		if i+1 < n {
			b1 = int(s[i+1])
		}
		if i+1 < n && !k.pair[int(b0)<<8|b1] {
			continue
		}
		for _, idx := range k.byFirst[b0] {
			if at(k.list[idx], s, i) {
				out = append(out, kwHit{i, idx})
				if first {
					return out
				}
			}
		}
	}
	return out
}

// at reports whether the keyword occurs in s at i.
func at[T ~string | ~[]byte](w keyword, s T, i int) bool {
	if len(s)-i < len(w.text) {
		return false
	}
	if !w.fold {
		return string(s[i:i+len(w.text)]) == w.text
	}
	for j := 0; j < len(w.text); j++ {
		c := s[i+j]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w.text[j] {
			return false
		}
	}
	return true
}
