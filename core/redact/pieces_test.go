package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzPieces: a stream cut into chunks, redacted chunk-wise, concatenates
// to the stream redacted whole.
func FuzzPieces(f *testing.F) {
	f.Add("use ghp_1234567890abcdefghijABCDEFGHIJ123456 to push", uint16(7), uint16(20))
	f.Add("password=hunter2 and token: abc", uint16(3), uint16(12))
	r, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string, cut1, cut2 uint16) {
		if looksLikeJSON(s) {
			return
		}
		a, b := int(cut1)%(len(s)+1), int(cut2)%(len(s)+1)
		if a > b {
			a, b = b, a
		}
		pieces := []string{s[:a], s[a:b], s[b:]}
		got := strings.Join(r.pieces(pieces), "")
		if want, _ := r.String(s); got != want {
			t.Fatalf("pieces %q\n got %q\nwant %q", pieces, got, want)
		}
	})
}

// FuzzScanner: the walk's JSON parser accepts exactly what encoding/json
// does, and copies what it does not redact byte for byte.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,null,"x\u0041\n"]}`, ` [ ] `, `{"a" "b"}`, `01`, `"\x01"`, `[1,]`, `{"a":1}x`, `"\ud800"`, `-`, `1.e5`} {
		f.Add([]byte(s))
	}
	r, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		w := &docWalk{r: r, override: func([]string) (string, bool) { return "", false }}
		out, ok := w.document(doc, 0)
		if ok != json.Valid(doc) {
			t.Fatalf("scanner ok=%v, json.Valid=%v for %q", ok, !ok, doc)
		}
		if ok && len(w.kinds) == 0 && !bytes.Equal(out, doc) {
			t.Fatalf("unredacted document changed:\n in %q\nout %q", doc, out)
		}
	})
}
