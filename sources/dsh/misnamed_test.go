package dsh_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/sources/dsh"
)

// TestMisnamedFile: a file whose name says zstd or zip but whose content
// is not, and does not decode as what it is, is refused as "not a zstd
// file" or "not a zip file" naming its first bytes — not as a JSONL file
// whose first line is no header; a file whose content decodes is taken
// whatever its name (the content decides the format).
func TestMisnamedFile(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	jsonl, zstd, zip := read("basic/session.jsonl"), read("basic/session.jsonl.zstd"), read("export/session-export.zip")
	garbage := []byte("\x00\x01\x02\x03 not a session log\n")
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" when it decodes
	}{
		{"up.jsonl.zstd", garbage, `up.jsonl.zstd: not a zstd file, as its name says: it starts with 00 01 02 03, not zstd's magic number 28 b5 2f fd`},
		{"up.zst", []byte(`{"type":"nope"}` + "\n"), `up.zst: not a zstd file, as its name says: it starts with 7b 22 74 79, not zstd's magic number`},
		{"up.zip", garbage, `up.zip: not a zip file, as its name says: it starts with 00 01 02 03, not a zip signature ("PK\x03\x04")`},
		{"up.ZIP", append(zstd[:4:4], garbage...), `up.ZIP: not a zip file, as its name says: it starts with 28 b5 2f fd`},
		{"up.zstd", nil, `up.zstd: not a zstd file, as its name says: it is empty`},
		{"up.jsonl", garbage, "up.jsonl: line 1: "},
		// The content decides: these decode.
		{"up.zst", jsonl, ""},
		{"up.zip", zstd, ""},
		{"up.zstd", zip, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, fileErr := dsh.ReadFile(path, dsh.Limits{})
			_, _, upErr := dsh.DecodeNamed(tc.name, bytes.NewReader(tc.data), int64(len(tc.data)), dsh.Limits{}, nil)
			for what, err := range map[string]error{"ReadFile": fileErr, "DecodeNamed": upErr} {
				if tc.want == "" {
					if err != nil {
						t.Errorf("%s: %v, want it decoded", what, err)
					}
					continue
				}
				msg := ""
				if err != nil {
					msg = strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
				}
				if err == nil || !strings.HasPrefix(msg, tc.want) {
					t.Errorf("%s: %v\nwant an error starting %q", what, err, tc.want)
				}
				if strings.Contains(tc.name, ".z") && strings.Contains(msg, "session header") {
					t.Errorf("%s: %q still speaks of a session header", what, msg)
				}
			}
		})
	}
}
