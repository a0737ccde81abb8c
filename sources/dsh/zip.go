package dsh

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"prism/core/notes"
)

// isSessionEntry reports whether a zip entry holds a session log: the root
// session.jsonl, or subagents/<id>/session.jsonl (either with .zstd).
func isSessionEntry(name string) (root, ok bool) {
	base := func(s string) bool { return s == "session.jsonl" || s == "session.jsonl.zstd" }
	if base(name) {
		return true, true
	}
	parts := strings.Split(name, "/")
	if len(parts) == 3 && parts[0] == "subagents" && parts[1] != "" && base(parts[2]) {
		return false, true
	}
	return false, false
}

// NotesEntry is the entry of an export zip that holds the notes beside
// its sessions' logs (prism export --with-notes): one notes.Note as JSON
// per line.
const NotesEntry = "notes.jsonl"

// DecodeZip decodes a dsh session export archive: the root session.jsonl
// and every subagents/<id>/session.jsonl, and prism's notes.jsonl (each
// note goes to its session's Log.SideNotes; a note of a session the zip
// does not hold, or one its kind refuses, fails the whole zip naming its
// line). media/ and other entries are ignored. The root log comes first, then subagents with each parent before
// its children. Entry count and decompressed size are capped (lim), both as
// declared by the central directory and as actually read.
func DecodeZip(r io.ReaderAt, size int64, lim Limits) ([]*Log, error) {
	lim = lim.OrDefault()
	fail := func(entry, format string, args ...any) ([]*Log, error) {
		return nil, &FormatError{Entry: entry, Frame: -1, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	if n, ok := zipEntryCount(r, size); ok && n > uint64(lim.MaxZipEntries) {
		// Refused before archive/zip reads the directory into memory.
		return fail("", "zip has %d entries, over the limit of %d", n, lim.MaxZipEntries)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fail("", "not a readable zip archive (truncated or corrupt): %v", err)
	}
	if len(zr.File) > lim.MaxZipEntries {
		return fail("", "zip has %d entries, over the limit of %d", len(zr.File), lim.MaxZipEntries)
	}
	var entries []*zip.File
	var notesFile *zip.File
	var declared uint64
	haveRoot := false
	for _, f := range zr.File {
		if f.Name == NotesEntry && !f.FileInfo().IsDir() {
			if notesFile != nil {
				return fail(f.Name, "zip holds more than one %s", NotesEntry)
			}
			if f.UncompressedSize64 > uint64(lim.MaxLogBytes) {
				return fail(f.Name, "entry declares %d bytes, over the limit of %d", f.UncompressedSize64, lim.MaxLogBytes)
			}
			notesFile = f
			continue
		}
		root, ok := isSessionEntry(f.Name)
		if !ok || f.FileInfo().IsDir() {
			continue
		}
		if root {
			if haveRoot {
				return fail(f.Name, "zip holds more than one root session log")
			}
			haveRoot = true
		}
		if f.UncompressedSize64 > uint64(lim.MaxLogBytes) {
			return fail(f.Name, "entry declares %d bytes, over the limit of %d", f.UncompressedSize64, lim.MaxLogBytes)
		}
		declared += f.UncompressedSize64
		if declared > uint64(lim.MaxZipBytes) {
			return fail(f.Name, "session entries declare more than %d bytes in total (a zip bomb?)", lim.MaxZipBytes)
		}
		entries = append(entries, f)
	}
	if !haveRoot {
		return fail("", "no session.jsonl at the root of the archive")
	}
	var logs []*Log
	read := &countingReader{limit: lim.MaxZipBytes}
	b := newBudget(lim.MaxMemoryBytes)
	seen := map[string]string{}
	for _, f := range entries {
		rc, err := f.Open()
		if err != nil {
			return fail(f.Name, "cannot open entry: %v", err)
		}
		l, err := decodeEntry(rc, f, read, lim, b)
		rc.Close()
		if err != nil {
			return nil, err
		}
		l.Entry = f.Name
		if prev, dup := seen[l.Header.ID]; dup {
			return fail(f.Name, "session %s appears twice (also in %s)", l.Header.ID, prev)
		}
		seen[l.Header.ID] = f.Name
		logs = append(logs, l)
	}
	if notesFile != nil {
		if err := zipNotes(notesFile, lim, logs); err != nil {
			return nil, err
		}
	}
	return orderLogs(logs), nil
}

// zipNotes reads an export zip's notes.jsonl into the SideNotes of the
// logs whose session each note names.
func zipNotes(f *zip.File, lim Limits, logs []*Log) error {
	fail := func(line int, format string, args ...any) error {
		return &FormatError{Entry: f.Name, Frame: -1, Offset: -1, Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	byID := map[string]*Log{}
	for _, l := range logs {
		byID[l.Header.ID] = l
	}
	rc, err := f.Open()
	if err != nil {
		return fail(0, "cannot open entry: %v", err)
	}
	defer rc.Close()
	r := &countingReader{r: rc, limit: int64(min(f.UncompressedSize64, uint64(lim.MaxLogBytes)))}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), notes.MaxData+64<<10)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(text))
		d.DisallowUnknownFields()
		var n notes.Note
		if err := d.Decode(&n); err != nil {
			return fail(line, "not a note: %v", err)
		}
		l := byID[n.Session]
		switch {
		case n.ID == "":
			return fail(line, "note has no id")
		case l == nil:
			return fail(line, "note %s is of session %q, which the archive does not hold", n.ID, n.Session)
		case n.RemovedAtSeq != nil && *n.RemovedAtSeq < n.AtSeq:
			return fail(line, "note %s is removed at seq %d, before it applies (%d)", n.ID, *n.RemovedAtSeq, n.AtSeq)
		}
		data, _, err := notes.Check(notes.Input{Session: n.Session, Kind: n.Kind, CallID: n.CallID, Author: n.Author, Data: n.Data})
		if err != nil {
			return fail(line, "note %s: %v", n.ID, err)
		}
		n.Data = data
		l.SideNotes = append(l.SideNotes, n)
	}
	switch {
	case r.over:
		return fail(0, "entry inflates past its declared size of %d bytes", f.UncompressedSize64)
	case sc.Err() != nil:
		return fail(line+1, "%v", sc.Err())
	case r.err != nil:
		return fail(0, "corrupt entry: %v", r.err)
	}
	return nil
}

// orderLogs puts the root first, then each parent before its children
// (ties by entry name).
func orderLogs(logs []*Log) []*Log {
	sort.SliceStable(logs, func(i, j int) bool {
		ri, _ := isSessionEntry(logs[i].Entry)
		rj, _ := isSessionEntry(logs[j].Entry)
		if ri != rj {
			return ri
		}
		return logs[i].Entry < logs[j].Entry
	})
	byID := map[string]*Log{}
	for _, l := range logs {
		byID[l.Header.ID] = l
	}
	out := make([]*Log, 0, len(logs))
	placed := map[string]bool{}
	var place func(l *Log, depth int)
	place = func(l *Log, depth int) {
		if placed[l.Header.ID] {
			return
		}
		if p, ok := byID[l.Header.ParentSession]; ok && depth < len(logs) {
			place(p, depth+1)
		}
		if !placed[l.Header.ID] {
			placed[l.Header.ID] = true
			out = append(out, l)
		}
	}
	for _, l := range logs {
		place(l, 0)
	}
	return out
}

// decodeEntry streams one session entry through its decoder, counting what
// it inflates to against its declared size and the zip's total.
func decodeEntry(rc io.Reader, f *zip.File, total *countingReader, lim Limits, b *budget) (*Log, error) {
	entry := &countingReader{r: rc, limit: int64(min(f.UncompressedSize64, uint64(lim.MaxLogBytes)))}
	total.r = entry
	br := bufio.NewReaderSize(total, 64<<10)
	head, _ := br.Peek(4)
	var l *Log
	var err error
	if Detect(head) == FormatZstd {
		l, err = decodeZstd(br, lim, b)
	} else {
		var logs []*Log
		if logs, err = decodeJSONL(br, lim, b, false); err == nil {
			l = logs[0]
		}
	}
	switch {
	case entry.over:
		return nil, &FormatError{Entry: f.Name, Frame: -1, Offset: -1, Reason: fmt.Sprintf("entry inflates past its declared size of %d bytes", f.UncompressedSize64)}
	case total.over:
		return nil, &FormatError{Entry: f.Name, Frame: -1, Offset: -1, Reason: fmt.Sprintf("session entries inflate past %d bytes in total (a zip bomb?)", lim.MaxZipBytes)}
	case entry.err != nil:
		return nil, &FormatError{Entry: f.Name, Frame: -1, Offset: -1, Reason: fmt.Sprintf("corrupt entry: %v", entry.err)}
	case err != nil:
		return nil, withFile(err, "", f.Name)
	}
	return l, nil
}

// countingReader reads r up to limit bytes; reading more sets over and
// fails. It remembers r's own error (a corrupt deflate stream, a bad CRC).
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	over  bool
	err   error
}

var errOverLimit = errors.New("over the size limit")

// Read implements io.Reader.
func (c *countingReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errOverLimit
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		c.over = true
		return 0, errOverLimit
	}
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}

// zipEntryCount reads the entry count the end of central directory record
// declares (the zip64 one when the classic field is saturated). ok is false
// when no such record is found; archive/zip then reports the damage.
func zipEntryCount(r io.ReaderAt, size int64) (n uint64, ok bool) {
	const eocdLen, maxComment = 22, 65535
	tail := min(size, eocdLen+maxComment)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return 0, false
	}
	if n := binary.LittleEndian.Uint16(buf[i+10:]); n != 0xFFFF {
		return uint64(n), true
	}
	// zip64: the locator sits just before the record and points at the
	// zip64 end of central directory record.
	if i < 20 || !bytes.Equal(buf[i-20:i-16], []byte("PK\x06\x07")) {
		return 0, false
	}
	off := int64(binary.LittleEndian.Uint64(buf[i-20+8:]))
	var rec [56]byte
	if off < 0 || off > size-56 {
		return 0, false
	}
	if _, err := r.ReadAt(rec[:], off); err != nil || !bytes.Equal(rec[:4], []byte("PK\x06\x06")) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(rec[32:]), true
}
