package sessionlog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"prism/core"
)

// ReadFile decodes the session log file at path, detecting its format from
// its content: one log for JSONL and zstd files, the root then its
// subagents for a dsh export zip. Errors name the file.
func ReadFile(path string, lim Limits) ([]*Log, Format, error) {
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
	head, _ := br.Peek(4)
	format := Detect(head)
	logs, err := decode(format, br, f, st.Size(), lim)
	if err != nil {
		return nil, format, withFile(err, path, "")
	}
	return logs, format, nil
}

// Decode decodes a session log read from r (size bytes long when known, or
// -1), detecting its format from its content.
func Decode(r io.Reader, size int64, lim Limits) ([]*Log, Format, error) {
	lim = lim.orDefault()
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	format := Detect(head)
	logs, err := decode(format, br, nil, size, lim)
	return logs, format, err
}

func decode(format Format, br *bufio.Reader, ra io.ReaderAt, size int64, lim Limits) ([]*Log, error) {
	switch format {
	case FormatJSONL:
		l, err := DecodeJSONL(br, lim)
		if err != nil {
			return nil, err
		}
		return []*Log{l}, nil
	case FormatZstd:
		data, err := readCapped(br, lim.MaxFileBytes)
		if err != nil {
			return nil, err
		}
		l, err := DecodeZstd(data, lim)
		if err != nil {
			return nil, err
		}
		return []*Log{l}, nil
	default:
		if ra == nil || size < 0 {
			data, err := readCapped(br, lim.MaxFileBytes)
			if err != nil {
				return nil, err
			}
			ra, size = bytes.NewReader(data), int64(len(data))
		} else if size > lim.MaxFileBytes {
			return nil, &FormatError{Frame: -1, Offset: -1, Reason: fmt.Sprintf("file is larger than the limit of %d bytes", lim.MaxFileBytes)}
		}
		return DecodeZip(ra, size, lim)
	}
}

func readCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &FormatError{Frame: -1, Offset: -1, Reason: fmt.Sprintf("file is larger than the limit of %d bytes", limit)}
	}
	return data, nil
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
