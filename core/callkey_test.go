package core_test

import (
	"testing"

	"prism/core"
)

func TestCallKeyIgnoresKeyOrderAndSpace(t *testing.T) {
	a := core.CallKey("read", `{"path":"a.txt","limit":10}`)
	b := core.CallKey("read", "{ \"limit\": 10,\n \"path\": \"a.txt\" }")
	if a != b {
		t.Fatalf("same arguments in another order: %q != %q", a, b)
	}
	for _, c := range []struct{ name, args string }{
		{"read", `{"path":"b.txt","limit":10}`},
		{"grep", `{"path":"a.txt","limit":10}`},
		{"read", `{"path":"a.txt","limit":10.0}`},
	} {
		if core.CallKey(c.name, c.args) == a {
			t.Errorf("CallKey(%q, %q) equals the key of a different call", c.name, c.args)
		}
	}
	if got := string(core.CanonicalJSON([]byte("*** Begin Patch"))); got != "*** Begin Patch" {
		t.Errorf("raw text changed: %q", got)
	}
	if got := string(core.CanonicalJSON([]byte(`{"a":1} {"b":2}`))); got != `{"a":1} {"b":2}` {
		t.Errorf("two values re-encoded: %q", got)
	}
}
