package dsh

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"prism/core"
)

// Tail decodes a dsh log that is still being written, one poll at a time:
// each Feed gets the file's bytes from Offset() on and consumes only the
// complete zstd frames (or complete lines, for plain logs) at their start,
// leaving an incomplete tail for the next Feed. Records must decode and
// continue the seq strictly; a Tail never repairs. A Feed streams: it holds
// one line, one zstd window and the events it returns (at most
// Limits.MaxMemoryBytes of them), never the bytes it was given whole.
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
	return &Tail{format: format, lim: lim.OrDefault(), s: scanner{mode: modeStrict}}
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
	return t.FeedFrom(bytes.NewReader(b))
}

// FeedFrom is Feed for the bytes r yields (the file from Offset() on, up to
// its current size).
func (t *Tail) FeedFrom(r io.Reader) ([]core.Event, error) {
	t.s.log.Events, t.s.log.Pos = t.s.log.Events[:0], t.s.log.Pos[:0]
	t.s.budget = newBudget(t.lim.MaxMemoryBytes)
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	if t.format == FormatZstd {
		err = t.feedZstd(br)
	} else {
		err = t.feedLines(br)
	}
	events := t.s.log.Events
	t.base += int64(len(events))
	t.s.log.Events, t.s.log.Pos, t.s.budget = nil, nil, nil
	return events, err
}

func (t *Tail) feedLines(br *bufio.Reader) error {
	lr := newLineReader(br, t.lim.MaxLineBytes)
	for {
		pos := Position{Frame: -1, Line: t.line + 1}
		line, nl, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errLongLine):
			return errAt(pos, "line is longer than the limit of %d bytes", t.lim.MaxLineBytes)
		case err != nil:
			return errAt(pos, "read: %v", err)
		case !nl:
			return nil // an incomplete line: wait for the rest
		}
		if err := t.record(line, pos); err != nil {
			return err
		}
		t.line++
		t.off += int64(len(line)) + 1
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
			return errAt(pos, "%s", seqMismatch(want, e.Seq))
		}
		t.s.log.Events = append(t.s.log.Events, e)
		t.s.log.Pos = append(t.s.log.Pos, pos)
	}
	if err := t.s.budget.charge(decoded); err != nil {
		return &FormatError{Frame: pos.Frame, Offset: -1, Line: pos.Line, Reason: err.Error(), overBudget: true}
	}
	return nil
}

// tailScanner adapts a Tail to the zstd frame decoder, which feeds records
// to a recorder.
type tailScanner struct{ t *Tail }

func (ts tailScanner) record(line []byte, pos Position) error { return ts.t.record(line, pos) }

func (t *Tail) feedZstd(br *bufio.Reader) error {
	z := newZstdText(t.lim)
	defer z.close()
	var fr frameReader
	for {
		at := t.off
		err := fr.start(br)
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, errTorn):
			return nil // nothing more, or a frame still being written
		case err != nil:
			return &FormatError{Frame: t.frame, Offset: at, Reason: err.Error()}
		}
		if !fr.skippable {
			// A frame is all or nothing: decode it completely before
			// committing any of its events.
			n, header, h := len(t.s.log.Events), t.s.header, t.s.log.Header
			z.line = t.line
			torn, err := z.frame(tailScanner{t}, &fr, t.frame, at)
			if torn || err != nil {
				t.s.budget.release(t.s.log.Events[n:])
				t.s.log.Events, t.s.log.Pos = t.s.log.Events[:n], t.s.log.Pos[:n]
				t.s.header, t.s.log.Header = header, h
				return err // nil when torn: the rest comes with a later Feed
			}
			t.line = z.line
		}
		t.frame++
		t.off += fr.n
	}
}

// String describes the tail's position, for logs.
func (t *Tail) String() string {
	return fmt.Sprintf("offset %d, frame %d, line %d, next seq %d", t.off, t.frame, t.line, t.NextSeq())
}
