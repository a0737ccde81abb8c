package sessionlog

import (
	"bytes"
	"fmt"

	"prism/core"
)

// Tail decodes a dsh log that is still being written, one poll at a time:
// each Feed gets the file's bytes from Offset() on and consumes only the
// complete zstd frames (or complete lines, for plain logs) at their start,
// leaving an incomplete tail for the next Feed. Records must decode and
// continue the seq strictly; a Tail never repairs.
type Tail struct {
	format Format
	lim    Limits
	off    int64
	frame  int // frames consumed
	line   int // lines consumed
	s      scanner
	base   int64 // seq of the first event of the current Feed
}

// NewTail returns a Tail for a FormatJSONL or FormatZstd file read from its
// beginning.
func NewTail(format Format, lim Limits) *Tail {
	return &Tail{format: format, lim: lim.orDefault(), s: scanner{mode: modeStrict}}
}

// Offset returns the number of bytes consumed: the committed offset.
func (t *Tail) Offset() int64 { return t.off }

// NextSeq returns the seq the next event must have.
func (t *Tail) NextSeq() int64 { return int64(len(t.s.log.Events)) + t.base }

// Header returns the session header once the first record has been read.
func (t *Tail) Header() (core.SessionHeader, bool) { return t.s.log.Header, t.s.header }

// Feed consumes the complete records at the start of b (the file from
// Offset() on) and returns the events they hold. On an error it returns the
// events of the records before the bad one, with Offset() just past them.
func (t *Tail) Feed(b []byte) ([]core.Event, error) {
	t.s.log.Events, t.s.log.Pos = t.s.log.Events[:0], t.s.log.Pos[:0]
	var err error
	if t.format == FormatZstd {
		err = t.feedZstd(b)
	} else {
		err = t.feedLines(b)
	}
	events := t.s.log.Events
	t.base += int64(len(events))
	t.s.log.Events, t.s.log.Pos = nil, nil
	return events, err
}

func (t *Tail) feedLines(b []byte) error {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(b) > t.lim.MaxLineBytes {
				return errAt(Position{Frame: -1, Line: t.line + 1}, "line is longer than the limit of %d bytes", t.lim.MaxLineBytes)
			}
			return nil
		}
		pos := Position{Frame: -1, Line: t.line + 1}
		if i > t.lim.MaxLineBytes {
			return errAt(pos, "line is longer than the limit of %d bytes", t.lim.MaxLineBytes)
		}
		if err := t.record(b[:i], pos); err != nil {
			return err
		}
		t.line++
		t.off += int64(i + 1)
		b = b[i+1:]
	}
}

// record checks seq contiguity across Feeds (the scanner only sees this
// Feed's events).
func (t *Tail) record(line []byte, pos Position) error {
	if !t.s.header {
		return t.s.headerLine(line, pos)
	}
	decoded, err := DecodeRecord(line)
	if err != nil {
		return errAt(pos, "%v", err)
	}
	for _, e := range decoded {
		if want := t.base + int64(len(t.s.log.Events)); e.Seq != want {
			return errAt(pos, "seq gap: expected seq %d, got %d", want, e.Seq)
		}
		t.s.log.Events = append(t.s.log.Events, e)
		t.s.log.Pos = append(t.s.log.Pos, pos)
	}
	return nil
}

func (t *Tail) feedZstd(b []byte) error {
	frames, _, err := ScanFrames(b)
	for _, f := range frames {
		at := t.off
		if !f.Skippable {
			text, derr := decompress(b[f.Start:f.End], t.lim.MaxLogBytes, false)
			if derr != nil {
				return &FormatError{Frame: t.frame, Offset: at, Reason: "corrupt zstd frame: " + derr.Error()}
			}
			if len(text) == 0 || text[len(text)-1] != '\n' {
				return &FormatError{Frame: t.frame, Offset: at, Reason: "corrupt: the frame's text does not end with a newline"}
			}
			// A frame is all or nothing: decode it completely before
			// committing any of its events.
			n := len(t.s.log.Events)
			line := t.line
			for len(text) > 0 {
				i := bytes.IndexByte(text, '\n')
				line++
				if rerr := t.record(text[:i], Position{Frame: t.frame, Line: line}); rerr != nil {
					t.s.log.Events, t.s.log.Pos = t.s.log.Events[:n], t.s.log.Pos[:n]
					return withFrameOffset(rerr, at)
				}
				text = text[i+1:]
			}
			t.line = line
		}
		t.frame++
		t.off += int64(f.End - f.Start)
	}
	if err != nil {
		if fe, ok := err.(*FormatError); ok {
			fe.Frame, fe.Offset = t.frame, t.off
		}
		return err
	}
	return nil
}

// String describes the tail's position, for logs.
func (t *Tail) String() string {
	return fmt.Sprintf("offset %d, frame %d, line %d, next seq %d", t.off, t.frame, t.line, t.NextSeq())
}
