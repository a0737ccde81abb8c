package sessionlog

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
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

// DecodeZip decodes a dsh session export archive: the root session.jsonl
// and every subagents/<id>/session.jsonl (media/ and other entries are
// ignored). The root log comes first, then subagents with each parent before
// its children. Entry count and decompressed size are capped (lim), both as
// declared by the central directory and as actually read.
func DecodeZip(r io.ReaderAt, size int64, lim Limits) ([]*Log, error) {
	lim = lim.orDefault()
	fail := func(entry, format string, args ...any) ([]*Log, error) {
		return nil, &FormatError{Entry: entry, Frame: -1, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fail("", "not a readable zip archive (truncated or corrupt): %v", err)
	}
	if len(zr.File) > lim.MaxZipEntries {
		return fail("", "zip has %d entries, over the limit of %d", len(zr.File), lim.MaxZipEntries)
	}
	var entries []*zip.File
	var declared uint64
	haveRoot := false
	for _, f := range zr.File {
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
	var read int64
	seen := map[string]string{}
	for _, f := range entries {
		rc, err := f.Open()
		if err != nil {
			return fail(f.Name, "cannot open entry: %v", err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)+1))
		rc.Close()
		if err != nil {
			return fail(f.Name, "corrupt entry: %v", err)
		}
		if uint64(len(data)) > f.UncompressedSize64 {
			return fail(f.Name, "entry inflates past its declared size of %d bytes", f.UncompressedSize64)
		}
		read += int64(len(data))
		if read > lim.MaxZipBytes {
			return fail(f.Name, "session entries inflate past %d bytes in total (a zip bomb?)", lim.MaxZipBytes)
		}
		var l *Log
		if Detect(data) == FormatZstd {
			l, err = DecodeZstd(data, lim)
		} else {
			l, err = DecodeJSONL(bytes.NewReader(data), lim)
		}
		if err != nil {
			return nil, withFile(err, "", f.Name)
		}
		l.Entry = f.Name
		if prev, dup := seen[l.Header.ID]; dup {
			return fail(f.Name, "session %s appears twice (also in %s)", l.Header.ID, prev)
		}
		seen[l.Header.ID] = f.Name
		logs = append(logs, l)
	}
	return orderLogs(logs), nil
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
