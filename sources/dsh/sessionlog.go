// Package dsh reads and writes session logs on disk: prism's JSONL
// export and the three formats of DeepSeek Harness (dsh) — a plain
// session.jsonl (with packed text-chunks / reasoning-chunks /
// tool-call-chunks rows), a session.jsonl.zstd (a chain of independent zstd
// frames) and dsh's export .zip (the session plus subagents/<id>/session.jsonl).
//
// Other agents' transcripts (Claude Code's) are read through the same
// entry points when the caller passes their decoders (Foreign, to
// ReadFileWith and DecodeNamed); this package knows none of them.
//
// It is a pure codec: no database and no file watching. Decoders never panic
// on any input; every failure is a *FormatError that names the file (when the
// caller gave one), the zip entry, the zstd frame, the line and the reason.
//
// Torn tails follow dsh's loader:
// an incomplete final zstd frame, or a plain log's final line without a
// newline, is a torn tail and is ignored (the complete records of a torn
// frame's decodable prefix are kept, as dsh's decompressZstdPrefix does). In
// a plain log, an unparsable line or a seq gap is a torn tail when no later
// record holds a turn/end, and corruption otherwise. Inside complete zstd
// frames every record must decode.
//
// A prism JSONL file may hold many sessions, one after another: each
// session header line after the first ends a session and starts the next.
// The torn-tail rule applies to each session's own lines; a header is never
// part of a torn tail. A session id may appear once per file.
package dsh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"prism/core"
	"prism/core/notes"
)

// Format identifies an on-disk session log encoding.
type Format int

// Formats.
const (
	// FormatJSONL is a plain JSONL log: a {"type":"session",…} header line,
	// then one record per line. prism's export and dsh's session.jsonl share
	// it (prism never writes packed chunk rows; dsh may).
	FormatJSONL Format = iota + 1
	// FormatZstd is dsh's session.jsonl.zstd: frame 0 holds the header line,
	// each later frame one durable append batch.
	FormatZstd
	// FormatZip is dsh's session export archive.
	FormatZip
	// FormatForeign is another agent's transcript, read by a Foreign
	// decoder the caller passed (ReadFileWith, DecodeNamed).
	FormatForeign
)

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case FormatJSONL:
		return "jsonl"
	case FormatZstd:
		return "jsonl.zstd"
	case FormatZip:
		return "zip"
	case FormatForeign:
		return "foreign"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

var (
	zstdMagic = []byte{0x28, 0xB5, 0x2F, 0xFD}
	zipMagic  = []byte("PK\x03\x04")
	zipEmpty  = []byte("PK\x05\x06")
)

// Detect returns the format of a file from its first bytes: the zstd frame
// magic, a zip signature, or else plain JSONL. Content wins over the name.
func Detect(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, zstdMagic):
		return FormatZstd
	case bytes.HasPrefix(head, zipMagic), bytes.HasPrefix(head, zipEmpty):
		return FormatZip
	}
	return FormatJSONL
}

// Limits bound what a decoder accepts, so hostile input (a 250 MB line, a
// zip bomb, a zstd frame inflating to gigabytes) fails with an error
// instead of exhausting memory.
//
// Decoding streams: a decoder holds one line (at most MaxLineBytes), one
// zstd window (at most 16 MiB) and the events decoded so far (at most
// MaxMemoryBytes, counted as their data plus a fixed overhead each), never
// a whole file or a whole decompressed frame. The byte limits on text and
// files bound the work, not the memory.
type Limits struct {
	MaxLineBytes   int   // one JSONL record (after decompression)
	MaxLogBytes    int64 // one session's decompressed text
	MaxFileBytes   int64 // one compressed file (zstd or zip)
	MaxZipEntries  int   // entries in a zip's central directory
	MaxZipBytes    int64 // session entries of one zip, decompressed, in total
	MaxMemoryBytes int64 // decoded events of one input (every log of a zip), held in memory
}

// DefaultLimits returns the limits import and watch use unless told
// otherwise. The memory budget is a quarter of the file-size cap: a file
// that inflates past it is refused, not held.
func DefaultLimits() Limits {
	return Limits{
		MaxLineBytes:   16 << 20,
		MaxLogBytes:    256 << 20,
		MaxFileBytes:   256 << 20,
		MaxZipEntries:  4096,
		MaxZipBytes:    512 << 20,
		MaxMemoryBytes: 64 << 20,
	}
}

// OrDefault is l with each zero limit set to DefaultLimits's: what every
// decoder of a session file, dsh's and the foreign formats', reads with.
func (l Limits) OrDefault() Limits {
	d := DefaultLimits()
	if l.MaxLineBytes > 0 {
		d.MaxLineBytes = l.MaxLineBytes
	}
	if l.MaxLogBytes > 0 {
		d.MaxLogBytes = l.MaxLogBytes
	}
	if l.MaxFileBytes > 0 {
		d.MaxFileBytes = l.MaxFileBytes
	}
	if l.MaxZipEntries > 0 {
		d.MaxZipEntries = l.MaxZipEntries
	}
	if l.MaxZipBytes > 0 {
		d.MaxZipBytes = l.MaxZipBytes
	}
	if l.MaxMemoryBytes > 0 {
		d.MaxMemoryBytes = l.MaxMemoryBytes
	}
	return d
}

// Position locates a record: its 1-based line in the session's logical
// (decompressed) text, where the header is line 1, and for zstd logs the
// 0-based frame holding it (-1 otherwise).
type Position struct {
	Frame int
	Line  int
}

// Log is one decoded session log.
type Log struct {
	Header core.SessionHeader
	// Events are the stored events, packed rows expanded; Events[i].Seq == i.
	Events []core.Event
	// Pos[i] is where Events[i] was read (a packed row's events share one).
	Pos []Position
	// Entry is the zip entry the log came from ("" outside a zip).
	Entry string
	// Torn describes a torn tail that was ignored ("" when there was none).
	Torn string
	// HeaderLine is the line of the session's header in its text: 1 but
	// for the later sessions of a prism JSONL file holding several.
	HeaderLine int
	// Notes are what a Foreign decoder reports of lines it kept raw (a
	// malformed line, with its number) while decoding the rest.
	Notes []string
	// Source is what a Foreign decoder says the session's source is,
	// stored beside the header (nil: nothing to say).
	Source *core.SourceInfo
	// SideNotes are the notes beside this session's log that an export
	// zip's notes.jsonl holds for it (prism export --with-notes), each
	// checked (notes.Check).
	SideNotes []notes.Note
	// DataChecked: every event's data came through core.Event's decoder
	// (or a packed row's expansion, which checks each member), so it is
	// lossless JSON and need not be scanned again (core.ValidateDecodedLog).
	// Set by the decoder of prism and dsh logs, not by Foreign ones.
	DataChecked bool
}

// FormatError is a decoding failure with its location. It is a core.Coded
// error with code core.CodeInvalid.
type FormatError struct {
	File   string // set by ReadFile and by callers that know the name
	Entry  string // zip entry
	Frame  int    // 0-based zstd frame, -1 when not applicable
	Offset int64  // byte offset of the frame in the file, -1 when unknown
	Line   int    // 1-based line in the logical text, 0 when not applicable
	Reason string

	overBudget bool // the decode ran out of its memory budget
}

// Error returns "file: entry: frame N (byte X), line L: reason", leaving
// out the parts that do not apply.
func (e *FormatError) Error() string {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
	}
	if e.File != "" {
		b.WriteString(e.File)
	}
	if e.Entry != "" {
		sep()
		b.WriteString(e.Entry)
	}
	if e.Frame >= 0 {
		sep()
		fmt.Fprintf(&b, "frame %d", e.Frame)
		if e.Offset >= 0 {
			fmt.Fprintf(&b, " (byte %d)", e.Offset)
		}
	}
	if e.Line > 0 {
		if e.Frame >= 0 {
			b.WriteString(", ")
		} else {
			sep()
		}
		fmt.Fprintf(&b, "line %d", e.Line)
	}
	sep()
	b.WriteString(e.Reason)
	return b.String()
}

// ErrorName returns "SessionLogFormatError".
func (e *FormatError) ErrorName() string { return "SessionLogFormatError" }

// ErrorCode returns core.CodeInvalid.
func (e *FormatError) ErrorCode() string { return core.CodeInvalid }

func errAt(pos Position, format string, args ...any) *FormatError {
	return &FormatError{Frame: pos.Frame, Offset: -1, Line: pos.Line, Reason: fmt.Sprintf(format, args...)}
}

// withFile sets the file (and entry) of a *FormatError in err's chain, or
// wraps another error with the file name.
func withFile(err error, file, entry string) error {
	if err == nil {
		return nil
	}
	var fe *FormatError
	if errors.As(err, &fe) {
		if fe.File == "" {
			fe.File = file
		}
		if fe.Entry == "" {
			fe.Entry = entry
		}
		return err
	}
	return &FormatError{File: file, Entry: entry, Frame: -1, Offset: -1, Reason: err.Error()}
}

// FirstPrompt is the text of the log's first prompt: its first user
// message a person wrote (not context); "" when it has none. Foreign
// decoders match a subagent with its spawning call by it.
func (l *Log) FirstPrompt() string {
	for _, e := range l.Events {
		if e.Type != core.EventUserMessage {
			continue
		}
		var m core.Message
		if json.Unmarshal(e.Data, &m) == nil && m.Source.Kind == core.SourceUser {
			return m.Content.PlainText()
		}
	}
	return ""
}
