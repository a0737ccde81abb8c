package redact

// Key bodies without their markers. A tool may show part of a private key
// with neither its BEGIN nor its END line: a read whose window (offset,
// limit) falls inside the key, a diff hunk of an edit inside it, a search
// that matched some of its lines. Nothing there says "key" but the shape:
// PEM wraps base64 at 64 characters a line (RFC 7468), OpenSSH at 70. Two
// or more consecutive lines that are each exactly such a line of mixed
// base64 (upper case, lower case and a digit, '=' only as padding), with
// the shorter last line that may follow them, are hidden as
// KindKeyMaterial. Certificate and public key bodies have the
// same shape and are hidden too: for a share a false positive costs a few
// lines, a false negative a key.

import "strings"

// keyLineWidths are the line widths of key bodies: PEM's and OpenSSH's.
func isKeyLineWidth(n int) bool { return n == 64 || n == 70 }

// isKeyLine reports whether l is one full line of a key body.
func isKeyLine(l string) bool {
	if !isKeyLineWidth(len(l)) {
		return false
	}
	var upper, lower, digit bool
	pad := 0
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		case c == '+' || c == '/':
		case c == '=' && i >= len(l)-2:
			pad++
		default:
			return false
		}
		if pad > 0 && c != '=' {
			return false
		}
	}
	return upper && lower && digit
}

// isKeyLastLine reports whether l may be the last, shorter line of a key
// body: base64, '=' only as padding.
func isKeyLastLine(l string) bool {
	if len(l) < 4 || len(l) >= 70 {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !isB64Byte(c) || c == '=' && i < len(l)-2 {
			return false
		}
	}
	return true
}

// keyLineText returns the part of a line a key body line would be: without
// a gutter ("12\t", "12: ", "Line 12: ", "12→", "12|"), surrounding blanks
// and a carriage return; start is its offset in the line.
func keyLineText(line string) (text string, start int) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	j := i
	if strings.HasPrefix(line[j:], "Line ") {
		j += len("Line ")
	}
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	if k > j {
		switch {
		case strings.HasPrefix(line[k:], "→"):
			k += len("→")
		case k < len(line) && (line[k] == ':' || line[k] == '\t' || line[k] == '|'):
			k++
		default:
			k = i // digits without a gutter mark: part of the text
		}
		for k < len(line) && (line[k] == ' ' || line[k] == '\t') {
			k++
		}
		i = k
	}
	end := len(line)
	for end > i && (line[end-1] == ' ' || line[end-1] == '\t' || line[end-1] == '\r') {
		end--
	}
	return line[i:end], i
}

// keyBodyHits returns the runs of two or more consecutive key body lines
// in s, each one hit from its first line's text to its last line's end.
func keyBodyHits(s string) []Hit {
	if len(s) < 2*64+1 || strings.IndexByte(s, '\n') < 0 {
		return nil
	}
	if _, _, ok := longRun(s, 0); !ok {
		return nil // no line of a key's width: most text
	}
	var hits []Hit
	runStart, runEnd, lines := 0, 0, 0
	flush := func() {
		if lines >= 2 {
			hits = append(hits, Hit{Kind: KindKeyMaterial, Start: runStart, End: runEnd})
		}
		lines = 0
	}
	for pos := 0; pos <= len(s); {
		nl := strings.IndexByte(s[pos:], '\n')
		end := len(s)
		if nl >= 0 {
			end = pos + nl
		}
		text, off := keyLineText(s[pos:end])
		switch {
		case isKeyLine(text):
			if lines == 0 {
				runStart = pos + off
			}
			runEnd = pos + off + len(text)
			lines++
		case lines >= 2 && isKeyLastLine(text):
			runEnd = pos + off + len(text) // the body's shorter last line
			flush()
		default:
			flush()
		}
		if nl < 0 {
			break
		}
		pos = end + 1
	}
	flush()
	return hits
}

// hasKeyLines reports whether a JSON document may hold two key body lines,
// in one string or in two: a run of key line characters of a key line's
// width, bounded by a quote or an escape (\n, \t) on each side.
func hasKeyLines(doc []byte) bool {
	found := 0
	for i := 0; i < len(doc); {
		start, end, ok := longRun(doc, i)
		if !ok {
			return false
		}
		i = end
		// The letter of an escape before the run is not part of it.
		if start >= 1 && doc[start-1] == '\\' {
			start++
		}
		before := start >= 1 && doc[start-1] == '"' || start >= 2 && doc[start-2] == '\\'
		after := i < len(doc) && (doc[i] == '"' || doc[i] == '\\')
		if before && after && isKeyLine(string(doc[start:i])) {
			if found++; found == 2 {
				return true
			}
		}
	}
	return false
}

// longRun returns the next run of 64 or more base64 bytes in s at or after
// from (from must start a run or follow a byte outside one). It looks at
// one byte in 64 where runs are short, as in ordinary text.
func longRun[T ~string | ~[]byte](s T, from int) (start, end int, ok bool) {
	const width = 64
	i := from
	for i+width <= len(s) {
		k := i + width - 1
		if !isB64Byte(s[k]) {
			i = k + 1
			continue
		}
		j := k
		for j > i && isB64Byte(s[j-1]) {
			j--
		}
		if j > i {
			i = j // s[j-1] is outside a run: a run may start at j
			continue
		}
		end := k + 1
		for end < len(s) && isB64Byte(s[end]) {
			end++
		}
		return i, end, true
	}
	return 0, 0, false
}

func isB64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}
