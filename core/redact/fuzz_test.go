package redact_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// selfEvident are secrets found by their form alone, whatever surrounds
// them (others need a context such as "Bearer " or "password=").
func selfEvident() []string {
	return []string{awsKeyID, gcpKey, oauthToken, githubPAT, githubFine, gitlabPAT, anthropicKey, openaiKey,
		deepseekKey, otherSKKey, stripeKey, slackToken, hfToken, npmToken, jwtToken, privateKey}
}

// FuzzString: a secret set apart by spaces or newlines never survives,
// whatever text surrounds it; the output is valid UTF-8 when the input is;
// and redacting the output again finds nothing.
func FuzzString(f *testing.F) {
	f.Add("password=", " tail", uint8(0), true)
	f.Add("-----BEGIN PRIVATE KEY-----", "", uint8(15), false)
	f.Add(`{"token": "`, `"}`, uint8(3), true)
	f.Add("Authorization: Bearer", "\nDB_PASSWORD=x", uint8(7), false)
	r := newRedactor(f)
	secrets := selfEvident()
	f.Fuzz(func(t *testing.T, prefix, suffix string, which uint8, newline bool) {
		secret := secrets[int(which)%len(secrets)]
		sep := " "
		if newline {
			sep = "\n"
		}
		in := prefix + sep + secret + sep + suffix
		out, hits := r.String(in)
		if strings.Count(out, secret) > strings.Count(prefix, secret)+strings.Count(suffix, secret) {
			t.Fatalf("secret survived:\n in %q\nout %q", in, out)
		}
		last := 0
		for _, h := range hits {
			if h.Start < last || h.End <= h.Start || h.End > len(in) {
				t.Fatalf("hits out of order or bounds: %+v in %d bytes", hits, len(in))
			}
			last = h.End
		}
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("output is not valid UTF-8: %q", out)
		}
		if again, more := r.String(out); len(more) != 0 {
			t.Fatalf("redacting twice found more:\n in %q\nout %q\nagain %q", in, out, again)
		}
	})
}

// FuzzJSON: any input comes back as valid JSON; a valid document without
// hits comes back byte for byte.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"arguments":"{\"command\":\"echo password=hunter2\"}","n":1}`))
	f.Add([]byte(`[1, "x", {"api_key": "abc", "id": "sk-0123456789abcdef0123456789abcdef"}]`))
	f.Add([]byte(`"\u0041KIA"`))
	f.Add([]byte(`{"a":`))
	f.Add([]byte(`{"lines":[{"text":"-----BEGIN ` + `PRIVATE KEY-----"},{"text":"MIIEabcdefgh"},{"text":"\u0041"},{"text":"-----END ` + `PRIVATE KEY-----"}],"x":["a","-----BEGIN ` + `PRIVATE KEY-----",1,"b"]}`))
	r := newRedactor(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, kinds := r.JSON(doc)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", doc, out)
		}
		if json.Valid(doc) && len(kinds) == 0 && string(out) != string(doc) {
			t.Fatalf("a document without hits changed:\n in %q\nout %q", doc, out)
		}
	})
}
