package dsh

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"prism/core"
)

// ReadFile decodes the session log file at path, detecting its format from
// its content: every session of a JSONL file (in its order), the one of a
// zstd file, the root then its subagents for a dsh export zip. It streams the file (see Limits). Errors
// name the file.
func ReadFile(path string, lim Limits) ([]*Log, Format, error) {
	return ReadFileWith(path, lim, nil)
}

// Foreign is another agent's transcript format that ReadFileWith and
// DecodeNamed read beside prism's and dsh's: Detect sees the first bytes of
// a file that is not zstd or zip (up to 64 KiB, fewer if the file is
// shorter) and says whether the format is its; Read then decodes the whole
// stream within lim (errors are best *FormatError with a line).
type Foreign struct {
	Name   string
	Detect func(head []byte) bool
	Read   func(r *bufio.Reader, lim Limits) ([]*Log, error)
}

// detectForeign returns the first of foreign that claims br's head.
func detectForeign(br *bufio.Reader, foreign []Foreign) *Foreign {
	if len(foreign) == 0 {
		return nil
	}
	head, _ := br.Peek(br.Size())
	for i := range foreign {
		if foreign[i].Detect(head) {
			return &foreign[i]
		}
	}
	return nil
}

// ReadFileWith is ReadFile that also reads the foreign formats given, each
// detected by content when the file is not zstd or zip.
func ReadFileWith(path string, lim Limits, foreign []Foreign) ([]*Log, Format, error) {
	lim = lim.orDefault()
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if st.IsDir() {
		return nil, 0, withFile(fmt.Errorf("is a directory"), path, "")
	}
	br := bufio.NewReaderSize(f, 64<<10)
	peek, _ := br.Peek(4)
	head := bytes.Clone(peek)
	format := Detect(head)
	var fg *Foreign
	if format == FormatJSONL {
		fg = detectForeign(br, foreign)
	}
	var logs []*Log
	switch {
	case format != FormatJSONL && st.Size() > lim.MaxFileBytes:
		err = tooLarge(lim)
	case format == FormatZip:
		logs, err = DecodeZip(f, st.Size(), lim)
	case fg != nil:
		format = FormatForeign
		logs, err = fg.Read(br, lim)
	default:
		logs, err = decodeStream(format, br, lim)
	}
	if err != nil {
		return nil, format, withFile(misnamed(err, path, head, format), path, "")
	}
	return logs, format, nil
}

// Decode decodes a session log read from r (size bytes long when known, or
// -1), detecting its format from its content. JSONL and zstd stream from r;
// a zip, whose directory is at its end, is read in place when r is an
// io.ReaderAt of known size (a file), else first copied to a temporary file
// (at most Limits.MaxFileBytes).
func Decode(r io.Reader, size int64, lim Limits) ([]*Log, Format, error) {
	return DecodeNamed("", r, size, lim, nil)
}

// DecodeNamed is Decode for a file called name (an upload's name) that
// also reads the foreign formats given, as ReadFileWith does: the content
// still decides the format, but when a name that says zstd or zip (".zst",
// ".zstd", ".zip") holds something else that fails to decode, the error
// says the file is not what its name says. Errors name the file.
func DecodeNamed(name string, r io.Reader, size int64, lim Limits, foreign []Foreign) ([]*Log, Format, error) {
	lim = lim.orDefault()
	br := bufio.NewReaderSize(r, 64<<10)
	peek, _ := br.Peek(4)
	head := bytes.Clone(peek)
	logs, format, err := decodeDetected(r, br, Detect(head), size, lim, foreign)
	if err != nil && name != "" {
		err = withFile(misnamed(err, name, head, format), name, "")
	}
	return logs, format, err
}

// decodeDetected decodes br, the buffered reader over r, whose content is
// of format (a JSONL file may be one of the foreign formats); a zip is read
// in place when r is an io.ReaderAt.
func decodeDetected(r io.Reader, br *bufio.Reader, format Format, size int64, lim Limits, foreign []Foreign) ([]*Log, Format, error) {
	if format != FormatJSONL && size > lim.MaxFileBytes {
		return nil, format, tooLarge(lim)
	}
	switch format {
	case FormatJSONL:
		if f := detectForeign(br, foreign); f != nil {
			logs, err := f.Read(br, lim)
			return logs, FormatForeign, err
		}
		logs, err := decodeStream(format, br, lim) // bounded by Limits.MaxLogBytes
		return logs, format, err
	case FormatZstd:
		capped := &countingReader{r: br, limit: lim.MaxFileBytes}
		logs, err := decodeStream(format, bufio.NewReaderSize(capped, 64<<10), lim)
		if capped.over {
			return nil, format, tooLarge(lim)
		}
		return logs, format, err
	}
	if ra, ok := r.(io.ReaderAt); ok && size >= 0 { // a file already (a spooled upload)
		logs, err := DecodeZip(ra, size, lim)
		return logs, format, err
	}
	tmp, err := os.CreateTemp("", "prism-import-*.zip")
	if err != nil {
		return nil, format, fmt.Errorf("spool the upload: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	n, err := io.Copy(tmp, io.LimitReader(br, lim.MaxFileBytes+1))
	if err != nil {
		return nil, format, fmt.Errorf("spool the upload: %w", err)
	}
	if n > lim.MaxFileBytes {
		return nil, format, tooLarge(lim)
	}
	logs, err := DecodeZip(tmp, n, lim)
	return logs, format, err
}

// claimedFormat returns the format a file name says its content has:
// zstd for ".zst" and ".zstd", zip for ".zip" (ok false: no claim).
func claimedFormat(name string) (Format, bool) {
	switch n := strings.ToLower(name); {
	case strings.HasSuffix(n, ".zst"), strings.HasSuffix(n, ".zstd"):
		return FormatZstd, true
	case strings.HasSuffix(n, ".zip"):
		return FormatZip, true
	}
	return 0, false
}

// misnamed replaces err, the failed decode of a file called name whose
// first bytes head are of format got, by "not a zstd file" or "not a zip
// file" when the name says the file is that and its content is not.
func misnamed(err error, name string, head []byte, got Format) error {
	want, ok := claimedFormat(name)
	if err == nil || !ok || want == got {
		return err
	}
	kind, magic := "zstd", "zstd's magic number 28 b5 2f fd"
	if want == FormatZip {
		kind, magic = "zip", `a zip signature ("PK\x03\x04")`
	}
	starts := "it is empty"
	if len(head) > 0 {
		starts = fmt.Sprintf("it starts with % x", head)
	}
	return &FormatError{File: name, Frame: -1, Offset: -1,
		Reason: fmt.Sprintf("not a %s file, as its name says: %s, not %s", kind, starts, magic)}
}

func tooLarge(lim Limits) error {
	return &FormatError{Frame: -1, Offset: -1, Reason: fmt.Sprintf("file is larger than the limit of %d bytes", lim.MaxFileBytes)}
}

// decodeStream decodes a JSONL or zstd log from br with one memory budget:
// every session of a prism JSONL file (see decodeJSONL), the one session of
// a zstd file.
func decodeStream(format Format, br *bufio.Reader, lim Limits) ([]*Log, error) {
	b := newBudget(lim.MaxMemoryBytes)
	if format == FormatZstd {
		l, err := decodeZstd(br, lim, b)
		if err != nil {
			return nil, err
		}
		return []*Log{l}, nil
	}
	return decodeJSONL(br, lim, b, true)
}

// WriteJSONL writes a session in prism's JSONL format: the header line, then
// one event per line (core.Event's byte-stable encoding), each ending in a
// newline. Decoding the output and writing it again yields the same bytes.
func WriteJSONL(w io.Writer, h core.SessionHeader, events []core.Event) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := append(AppendHeader(make([]byte, 0, 4096), h), '\n')
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	for _, e := range events {
		var err error
		if buf, err = AppendEvent(buf[:0], e); err != nil {
			return fmt.Errorf("event %d: %w", e.Seq, err)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
