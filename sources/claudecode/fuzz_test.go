package claudecode_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"prism/core"
	"prism/sources/claudecode"
	"prism/sources/dsh"
)

// FuzzDecode feeds arbitrary transcripts to the decoder: it never panics,
// and whatever it decodes is a valid log (core.ValidateLog), with every
// event located on a line of the input.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		if filepath.Ext(name[:len(name)-len(".jsonl")]) == ".events" {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"user","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image"}],"is_error":true}]},"toolUseResult":-0}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := claudecode.ReadLog(bufio.NewReader(bytes.NewReader(data)), dsh.Limits{MaxLineBytes: 1 << 16, MaxMemoryBytes: 1 << 22})
		if err != nil {
			if _, ok := err.(*dsh.FormatError); !ok {
				t.Fatalf("error is not a *dsh.FormatError: %T %v", err, err)
			}
			return
		}
		if err := core.ValidateLog(l.Header, l.Events); err != nil {
			t.Fatalf("ValidateLog: %v", err)
		}
		if len(l.Pos) != len(l.Events) {
			t.Fatalf("%d positions for %d events", len(l.Pos), len(l.Events))
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for i, p := range l.Pos {
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("event %d at line %d of %d", i, p.Line, lines)
			}
		}
	})
}
