package dsh_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"prism/sources/dsh"
)

func addFixtureSeeds(f *testing.F, names ...string) {
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(fixtureDir, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

var smallLimits = dsh.Limits{MaxLineBytes: 1 << 16, MaxLogBytes: 1 << 20, MaxFileBytes: 1 << 20, MaxZipEntries: 64, MaxZipBytes: 1 << 20}

// FuzzDecodeJSONL: arbitrary plain logs never panic; a decoded log is
// contiguous and re-encodes to prism JSONL that decodes to the same bytes.
func FuzzDecodeJSONL(f *testing.F) {
	addFixtureSeeds(f, "basic/session.jsonl", "crashed/session.jsonl", "bad/seq-gap.jsonl", "bad/non-json.jsonl", "bad/version.jsonl", "bad/unknown-type.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := dsh.DecodeJSONL(bytes.NewReader(data), smallLimits)
		if err != nil {
			return
		}
		for i, e := range l.Events {
			if e.Seq != int64(i) {
				t.Fatalf("event %d has seq %d", i, e.Seq)
			}
		}
		var a, b bytes.Buffer
		if err := dsh.WriteJSONL(&a, l.Header, l.Events); err != nil {
			t.Fatalf("WriteJSONL: %v", err)
		}
		again, err := dsh.DecodeJSONL(bytes.NewReader(a.Bytes()), dsh.Limits{})
		if err != nil {
			t.Fatalf("decoding our own export: %v\n%s", err, a.Bytes())
		}
		if err := dsh.WriteJSONL(&b, again.Header, again.Events); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("export → import → export differs:\n%s\n%s", a.Bytes(), b.Bytes())
		}
	})
}

// FuzzZstdFrames: arbitrary bytes through the frame scanner, the zstd
// decoder and the tail never panic, and the tail never reads past the
// complete frames.
func FuzzZstdFrames(f *testing.F) {
	addFixtureSeeds(f, "basic/session.jsonl.zstd", "torn/session.jsonl.zstd", "bad/corrupt-frame.jsonl.zstd", "bad/truncated-header.jsonl.zstd")
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, end, err := dsh.ScanFrames(data)
		if err == nil && end > len(data) {
			t.Fatalf("end %d past the input (%d)", end, len(data))
		}
		for _, fr := range frames {
			if fr.Start < 0 || fr.End > len(data) || fr.Start >= fr.End {
				t.Fatalf("bad frame %+v", fr)
			}
		}
		if l, err := dsh.DecodeZstd(data, smallLimits); err == nil {
			for i, e := range l.Events {
				if e.Seq != int64(i) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
		}
		tail := dsh.NewTail(dsh.FormatZstd, smallLimits)
		if _, err := tail.Feed(data); err == nil && tail.Offset() > int64(len(data)) {
			t.Fatalf("tail offset %d past the input", tail.Offset())
		}
	})
}

// FuzzDecodeZip: arbitrary archives never panic.
func FuzzDecodeZip(f *testing.F) {
	addFixtureSeeds(f, "export/session-export.zip", "bad/truncated.zip")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = dsh.Decode(bytes.NewReader(data), int64(len(data)), smallLimits)
	})
}
