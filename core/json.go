package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unsafe"
)

// ErrNotLossless reports a value that JSON cannot carry exactly: NaN, ±Inf,
// negative zero, a number out of float64 range, a cycle, or a Go value with
// no JSON form (channels, functions, complex numbers).
var ErrNotLossless = errors.New("value is not lossless JSON")

// Snapshot returns the lossless JSON encoding of v, or an error wrapping
// ErrNotLossless. It is dsh's snapshotJsonValue for Go values: the returned
// bytes are the value's canonical, immutable form.
func Snapshot(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if err := CheckJSON(x); err != nil {
			return nil, err
		}
		return compact(x)
	}
	data, err := MarshalNoEscape(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotLossless, err)
	}
	if err := checkNumbers(data); err != nil {
		return nil, err
	}
	return data, nil
}

func compact(data []byte) (json.RawMessage, error) {
	if isCompact(data) {
		return json.RawMessage(data), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotLossless, err)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// isCompact reports whether data has no insignificant whitespace.
func isCompact(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = stringEnd(data, i+1)
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// stringEnd returns the index of the quote that closes the JSON string
// whose text starts at i (len(data) when it does not close). It jumps from
// quote to quote (bytes.IndexByte is vectorized), so long string values —
// tool output — cost little; a quote is escaped when an odd run of
// backslashes precedes it.
func stringEnd(data []byte, i int) int {
	for i < len(data) {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return len(data)
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
	return len(data)
}

// CheckJSON reports whether data is valid JSON text whose numbers are all
// lossless (finite in float64 and not negative zero).
func CheckJSON(data []byte) error {
	if !json.Valid(data) {
		return fmt.Errorf("%w: invalid JSON text", ErrNotLossless)
	}
	return checkNumbers(data)
}

// checkNumbers scans valid JSON text for numbers JavaScript could not carry:
// negative zero and values that overflow float64.
func checkNumbers(data []byte) error {
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '"' {
			i = stringEnd(data, i+1)
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		start := i
		simple := true // digits only, short: cannot overflow
		for i < len(data) {
			d := data[i]
			if d == 'e' || d == 'E' {
				simple = false
			} else if !(d >= '0' && d <= '9' || d == '-' || d == '+' || d == '.') {
				break
			}
			i++
		}
		tok := data[start:i]
		i--
		if tok[0] == '-' && isZeroNumber(tok[1:]) {
			return fmt.Errorf("%w: negative zero", ErrNotLossless)
		}
		if !simple || len(tok) > 300 {
			f, err := strconv.ParseFloat(string(tok), 64)
			if err != nil || math.IsInf(f, 0) {
				return fmt.Errorf("%w: number %s is out of range", ErrNotLossless, tok)
			}
			if f == 0 && math.Signbit(f) {
				return fmt.Errorf("%w: negative zero", ErrNotLossless)
			}
		}
	}
	return nil
}

// isZeroNumber reports whether an unsigned JSON number token denotes zero.
func isZeroNumber(tok []byte) bool {
	for _, d := range tok {
		switch {
		case d == '0' || d == '.':
		case d == 'e' || d == 'E':
			return true
		default:
			return false
		}
	}
	return true
}

// ParseArguments parses a model's raw argument string the way dsh's loop
// does: the empty string is {}, valid JSON is its value (numbers as float64,
// objects as map[string]any, arrays as []any), and anything else is kept as
// the raw string itself — which a defined tool then refuses with
// `"arguments" must be an object`. A number too large for float64 parses to
// ±Inf, as JSON.parse does, and is later refused as not lossless.
func ParseArguments(raw string) any {
	if raw == "" {
		return map[string]any{}
	}
	var v any
	err := json.Unmarshal(textBytes(raw), &v)
	if err == nil {
		return v
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		// Valid JSON whose number overflowed float64: decode again keeping
		// numbers as text and convert them with JavaScript semantics.
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			return jsNumbers(v)
		}
	}
	return raw
}

func jsNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64) // ±Inf on overflow, like JS
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = jsNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsNumbers(e)
		}
	}
	return v
}

// IsLossless reports whether v, a generic JSON tree (the result of
// ParseArguments or json.Unmarshal into any), holds only lossless values.
func IsLossless(v any) bool {
	return losslessTree(v, 0)
}

const maxTreeDepth = 10000

func losslessTree(v any, depth int) bool {
	if depth > maxTreeDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0) && !(x == 0 && math.Signbit(x))
	case map[string]any:
		for _, e := range x {
			if !losslessTree(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !losslessTree(e, depth+1) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// textBytes returns the bytes of s without copying them, for a decoder to
// read: json.Unmarshal neither writes to its input nor keeps it (strings
// and raw messages it decodes are copies). A tool's arguments are decoded
// twice per call (the generic tree, the typed value), and may be large.
func textBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// MarshalNoEscape encodes v like json.Marshal but without escaping <, > and
// & — the way JavaScript's JSON.stringify writes them.
func MarshalNoEscape(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer func() {
		if e.buf.Cap() <= 64<<10 { // don't keep huge buffers alive
			encoders.Put(e)
		}
	}()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	out := e.buf.Bytes()
	return bytes.Clone(out[:len(out)-1]), nil // drop Encode's newline
}

// encoder is a reusable JSON encoder that does not escape HTML.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// CanonicalJSON re-encodes a JSON text with sorted object keys, no
// insignificant space and numbers kept as written, so two texts that
// differ only in key order or spacing compare equal. Text that is not
// one JSON value is returned as it is.
func CanonicalJSON(raw []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil || dec.More() {
		return raw
	}
	out, err := MarshalNoEscape(v)
	if err != nil {
		return raw
	}
	return bytes.TrimRight(out, "\n")
}

// CallKey is the identity of a tool call for comparison: the tool's name
// and its canonical arguments (CanonicalJSON of the raw argument string;
// a raw tool's free text, or anything that is not JSON, as it is). Two
// calls with equal keys asked for the same thing. Attention's loop rule
// and fork-and-compare share it.
func CallKey(name, rawArguments string) string {
	return name + "\x00" + string(CanonicalJSON([]byte(rawArguments)))
}
