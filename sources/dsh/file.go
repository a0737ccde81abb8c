package dsh

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// ReadPath, when set, is Read for a file whose path is known (a file
	// read by ReadFileWith, or tailed by the watcher): the path may give
	// what the content does not (a child's id, its parent's file).
	ReadPath func(path string, r *bufio.Reader, lim Limits) ([]*Log, error)
	// Related, when set, names the files that belong with the file at
	// path and that ReadFileWith reads after it, into the same result (a
	// transcript's subagent files). A watcher, which sees every file,
	// does not use it.
	Related func(path string) []string
	// Tail, when set, returns a LineTail of the plain (not compressed)
	// file at path: a watcher feeds it what the file grows by instead
	// of reading it whole again.
	Tail func(path string, lim Limits) LineTail
}

// ReadForeign decodes the stream r of the file at path (name "" when
// unknown) with f: ReadPath when it is set and the path known, else Read.
func (f *Foreign) ReadForeign(path string, r *bufio.Reader, lim Limits) ([]*Log, error) {
	if f.ReadPath != nil && path != "" {
		return f.ReadPath(path, r, lim)
	}
	return f.Read(r, lim)
}

// DetectForeign returns the one of foreign that claims head (a file's
// first bytes, its text once decompressed), or nil.
func DetectForeign(head []byte, foreign []Foreign) *Foreign {
	for i := range foreign {
		if foreign[i].Detect(head) {
			return &foreign[i]
		}
	}
	return nil
}

// zstdForeign reports which of foreign claims the text of the zstd file at
// path (a Codex .jsonl.zst archive is one zstd stream of JSONL lines), or
// nil: its first 64 KiB are decompressed in a pass of their own. A file
// of which not one byte decompresses is a corrupt archive (err); one that
// decompresses in part is claimed by none when its text is not foreign
// (dsh's zstd decoder then says what is wrong with it).
func zstdForeign(path string, foreign []Foreign) (*Foreign, error) {
	if len(foreign) == 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	dec := getDecoder()
	defer putDecoder(dec)
	if err := dec.Reset(bufio.NewReaderSize(f, 64<<10)); err != nil {
		return nil, &FormatError{Frame: -1, Offset: -1, Reason: "corrupt zstd archive: " + err.Error()}
	}
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(dec, head)
	if n == 0 && err != nil && err != io.EOF {
		return nil, &FormatError{Frame: -1, Offset: -1, Reason: "corrupt zstd archive: " + err.Error()}
	}
	return DetectForeign(head[:n], foreign), nil
}

// readZstdForeign decodes the zstd file f (of size bytes) with fg: the
// compressed input is capped at lim.MaxFileBytes, the text by fg's own
// limits. A corrupt archive fails naming the line it reached.
func readZstdForeign(path string, f *os.File, fg *Foreign, lim Limits) ([]*Log, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	dec := getDecoder()
	defer putDecoder(dec)
	capped := &countingReader{r: bufio.NewReaderSize(f, 64<<10), limit: lim.MaxFileBytes}
	if err := dec.Reset(capped); err != nil {
		return nil, &FormatError{Frame: -1, Offset: -1, Reason: "zstd: " + err.Error()}
	}
	logs, err := fg.ReadForeign(path, bufio.NewReaderSize(zstdErrors{dec}, 64<<10), lim)
	if capped.over {
		return nil, tooLarge(lim)
	}
	return logs, err
}

// zstdErrors names a decompression failure as one.
type zstdErrors struct{ r io.Reader }

func (z zstdErrors) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("corrupt zstd archive: %w", err)
	}
	return n, err
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
	lim = lim.OrDefault()
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
	var fg, zfg *Foreign
	switch format {
	case FormatJSONL:
		fg = detectForeign(br, foreign)
	case FormatZstd:
		if zfg, err = zstdForeign(path, foreign); err != nil {
			return nil, format, withFile(err, path, "")
		}
	}
	var logs []*Log
	switch {
	case format != FormatJSONL && st.Size() > lim.MaxFileBytes:
		err = tooLarge(lim)
	case format == FormatZip:
		logs, err = DecodeZip(f, st.Size(), lim)
	case zfg != nil:
		format = FormatForeign
		logs, err = readZstdForeign(path, f, zfg, lim)
	case fg != nil:
		format = FormatForeign
		logs, err = fg.ReadForeign(path, br, lim)
		if err == nil && fg.Related != nil {
			logs, err = readRelated(logs, fg, path, lim)
		}
	default:
		logs, err = decodeStream(format, br, lim)
	}
	if err != nil {
		if zfg != nil { // a zstd file indeed: no "not a zstd file"
			return nil, format, withFile(err, path, "")
		}
		return nil, format, withFile(misnamed(err, path, head, format), path, "")
	}
	return logs, format, nil
}

// readRelated appends to logs the logs of the files fg names as related to
// path (a transcript's subagent files), each read with fg.
func readRelated(logs []*Log, fg *Foreign, path string, lim Limits) ([]*Log, error) {
	for _, rel := range fg.Related(path) {
		f, err := os.Open(rel)
		if err != nil {
			return nil, withFile(err, rel, "")
		}
		more, err := fg.ReadForeign(rel, bufio.NewReaderSize(f, 64<<10), lim)
		f.Close()
		if err != nil {
			return nil, withFile(err, rel, "")
		}
		logs = append(logs, more...)
	}
	return logs, nil
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
	lim = lim.OrDefault()
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

// FileKind is what a session file holds, as SniffFile tells from its
// content.
type FileKind int

const (
	// KindUndecided: too little of the file is written to tell (empty, or
	// its first line still incomplete).
	KindUndecided FileKind = iota
	// KindUnknown: not a session log prism reads.
	KindUnknown
	// KindDsh: a prism or dsh session log (JSONL or zstd), tailed by Tail.
	KindDsh
	// KindForeign: another agent's transcript, read by a Foreign.
	KindForeign
)

// SniffFile tells what the file f at path holds, by its content: a dsh or
// prism log (a name of dsh's layout, session.jsonl or session.jsonl.zstd,
// or a first line that is a session header), one of foreign (compressed
// says the file is zstd: a .jsonl.zst archive), or neither. A zstd file
// of which nothing decompresses is KindUnknown with err saying so.
func SniffFile(path string, f io.ReaderAt, foreign []Foreign) (kind FileKind, fg *Foreign, compressed bool, err error) {
	head := make([]byte, 64<<10)
	n, rerr := f.ReadAt(head, 0)
	if rerr != nil && !errors.Is(rerr, io.EOF) || n == 0 {
		return KindUndecided, nil, false, nil
	}
	head = head[:n]
	base := filepath.Base(path)
	dshName := base == "session.jsonl" || base == "session.jsonl.zstd"
	switch Detect(head) {
	case FormatZip:
		return KindUnknown, nil, false, nil
	case FormatZstd:
		zfg, err := zstdForeign(path, foreign)
		switch {
		case zfg != nil:
			return KindForeign, zfg, true, nil
		case dshName || strings.HasSuffix(base, ".zstd"):
			return KindDsh, nil, true, nil
		case err != nil:
			return KindUnknown, nil, true, withFile(err, path, "")
		}
		return KindUnknown, nil, true, nil
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if !bytes.Contains(trimmed, []byte("\n")) && n < len(head[:cap(head)]) {
		return KindUndecided, nil, false, nil // the first line is still being written
	}
	if fg := DetectForeign(trimmed, foreign); fg != nil {
		return KindForeign, fg, false, nil
	}
	line, _, _ := bytes.Cut(trimmed, []byte("\n"))
	if dshName || bytes.Contains(line, []byte(`"type":"session"`)) {
		return KindDsh, nil, false, nil
	}
	return KindUnknown, nil, false, nil
}

// ReadFileAt decodes the first size bytes of the file f at path with fg
// (the file is a zstd archive when compressed): what the watcher reads of
// a transcript still being written, up to its last complete line.
func (fg *Foreign) ReadFileAt(path string, f *os.File, size int64, compressed bool, lim Limits) ([]*Log, error) {
	lim = lim.OrDefault()
	if compressed {
		logs, err := readZstdForeign(path, f, fg, lim)
		return logs, withFile(err, path, "")
	}
	logs, err := fg.ReadForeign(path, bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10), lim)
	return logs, withFile(err, path, "")
}
