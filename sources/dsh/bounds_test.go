package dsh_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"prism/sources/dsh"
)

const boundsHeader = `{"type":"session","version":0,"id":"0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f","createdAt":1764500000000}` + "\n"

// zstdStream compresses the output of write as one streamed zstd frame (a
// frame that does not declare its size up front, as a streaming encoder or
// `zstd` on a pipe writes it), with the given window.
func zstdStream(t *testing.T, window int, write func(io.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(window), zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	write(enc)
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rawFrame is one zstd frame holding text in a single raw block, declaring
// the window descriptor wd (no content size, no checksum).
func rawFrame(wd byte, text []byte) []byte {
	f := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	f = append(f, 0x00, wd)
	bh := uint32(1) | uint32(len(text))<<3 // last block, raw
	f = append(f, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(f, text...)
}

// newlines writes n newline bytes.
func newlines(w io.Writer, n int) {
	chunk := bytes.Repeat([]byte{'\n'}, 1<<20)
	for ; n > 0; n -= len(chunk) {
		_, _ = w.Write(chunk[:min(n, len(chunk))])
	}
}

// events writes n ignorable events continuing seq 0.
func events(w io.Writer, n int) {
	for i := range n {
		fmt.Fprintf(w, `{"type":"x-vendor/pad","seq":%d,"time":0,"data":{"pad":"%s"},"ignorable":true}`+"\n", i, strings.Repeat("p", 100))
	}
}

// TestDecode_hostileInputsFailClearly: inputs built to exhaust memory — a
// zstd frame inflating to hundreds of megabytes of empty lines, a log whose
// decoded events exceed the memory budget, a frame demanding a huge window,
// a zip holding one enormous line, a zip directory declaring a flood of
// entries — each fail with an error naming what was wrong, through every
// entry point.
func TestDecode_hostileInputsFailClearly(t *testing.T) {
	lim := dsh.Limits{MaxLineBytes: 1 << 20, MaxMemoryBytes: 1 << 20}
	bomb := zstdStream(t, 1<<20, func(w io.Writer) {
		io.WriteString(w, boundsHeader)
		newlines(w, 100<<20)
	})
	overBudget := zstdStream(t, 1<<20, func(w io.Writer) {
		io.WriteString(w, boundsHeader)
		events(w, 10_000) // about 1 MB of data, 3.5 MB counted
	})
	wideWindow := rawFrame(0x80, []byte(boundsHeader)) // window descriptor: 2^(10+16) = 64 MiB
	var longLine bytes.Buffer
	{
		zw := zip.NewWriter(&longLine)
		f, _ := zw.Create("session.jsonl")
		io.WriteString(f, boundsHeader)
		chunk := bytes.Repeat([]byte{'a'}, 1<<20)
		for range 16 {
			f.Write(chunk)
		}
		f.Write([]byte{'\n'})
		zw.Close()
	}
	manyEntries := zipOf([2]any{"session.jsonl", []byte(boundsHeader)})
	eocd := bytes.LastIndex(manyEntries, []byte("PK\x05\x06"))
	binary.LittleEndian.PutUint16(manyEntries[eocd+8:], 60000)
	binary.LittleEndian.PutUint16(manyEntries[eocd+10:], 60000)

	tests := []struct {
		name string
		data []byte
		want []string
	}{
		{"zstd frame inflating to 100 MB of empty lines", bomb, []string{"frame 0", "line 2", "not valid JSON"}},
		{"decoded events over the memory budget", overBudget, []string{"too large to import", "import memory budget of 1 MiB"}},
		{"zstd frame demanding a 64 MiB window", wideWindow, []string{"frame 0", "zstd window larger than the limit of 16 MiB"}},
		{"zip with a 16 MiB line", longLine.Bytes(), []string{"session.jsonl", "line 2", "longer than the limit of 1048576 bytes"}},
		{"zip directory declaring 60000 entries", manyEntries, []string{"zip has 60000 entries, over the limit of 4096"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := dsh.Decode(bytes.NewReader(tt.data), -1, lim)
			if err == nil {
				t.Fatal("Decode succeeded")
			}
			var fe *dsh.FormatError
			if !asFormatError(err, &fe) {
				t.Fatalf("Decode error %T %v, want a *FormatError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Decode error %q does not mention %q", err, w)
				}
			}
			if dsh.Detect(tt.data) == dsh.FormatZstd {
				// The watcher's tail streams the same way and fails the same.
				tail := dsh.NewTail(dsh.FormatZstd, lim)
				if _, err := tail.FeedFrom(bytes.NewReader(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want[len(tt.want)-1]) {
					t.Errorf("Tail.FeedFrom error = %v, want it to mention %q", err, tt.want[len(tt.want)-1])
				}
			}
		})
	}
}

func asFormatError(err error, fe **dsh.FormatError) bool {
	e, ok := err.(*dsh.FormatError)
	*fe = e
	return ok
}

// TestDecode_streamsWithinBudget: a log within the limits decodes
// completely from a plain reader (nothing is read whole up front).
func TestDecode_streamsWithinBudget(t *testing.T) {
	data := zstdStream(t, 1<<20, func(w io.Writer) {
		io.WriteString(w, boundsHeader)
		events(w, 5_000)
	})
	logs, format, err := dsh.Decode(io.MultiReader(bytes.NewReader(data)), -1, dsh.Limits{})
	if err != nil || format != dsh.FormatZstd {
		t.Fatalf("Decode = %v, %v", format, err)
	}
	if n := len(logs[0].Events); n != 5_000 {
		t.Fatalf("decoded %d events, want 5000", n)
	}
}
