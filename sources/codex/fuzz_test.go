package codex_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"prism/sources/codex"
)

// FuzzDecode holds the decoder to its contract on any input: it never
// panics, never fails on a short input with an id given, and its log is
// always valid (core.ValidateLog, and core.CheckRelations once crash
// repair closes an open turn).
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		if filepath.Ext(name[:len(name)-len(".jsonl")]) == ".golden" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		// Every fixture's lines one by one, so the fuzzer recombines them.
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		first, _, _ := bytes.Cut(in, []byte("\n"))
		_ = codex.Sniff(first) // must not panic
		r, err := codex.Decode(bytes.NewReader(in), codex.Options{ID: "fuzz"})
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		checkValid(t, r)
	})
}
