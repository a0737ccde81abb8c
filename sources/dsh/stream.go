package dsh

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"prism/core"
)

// errLongLine is a line over Limits.MaxLineBytes.
var errLongLine = errors.New("line too long")

// lineReader splits a stream into lines of at most max bytes, holding at
// most one line (plus the read buffer) at a time.
type lineReader struct {
	br   *bufio.Reader
	max  int
	long []byte // a line that did not fit the read buffer
}

func newLineReader(r io.Reader, max int) *lineReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 16<<10)
	}
	return &lineReader{br: br, max: max}
}

// reset points the reader at r, keeping its buffer.
func (lr *lineReader) reset(r io.Reader) { lr.br.Reset(r) }

// next returns the next line without its newline; nl reports whether a
// newline ended it (false only for the input's final bytes). The line is
// valid until the next call. At the end of the input it returns io.EOF; a
// line longer than max is errLongLine; a read error is returned as is (the
// line read up to it is dropped).
func (lr *lineReader) next() (line []byte, nl bool, err error) {
	if cap(lr.long) > 1<<20 {
		lr.long = nil // do not keep a huge line's buffer for the rest of the input
	}
	line, err = lr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(lr.long) > lr.max+1 {
				return nil, false, errLongLine
			}
			line, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, line...)
		}
		line = lr.long
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line, nl = line[:n-1], true
	}
	if len(line) > lr.max {
		return nil, false, errLongLine
	}
	switch {
	case err == nil:
		return line, true, nil
	case errors.Is(err, io.EOF) && len(line) > 0:
		return line, false, nil
	}
	return nil, false, err
}

// eventOverhead approximates what one decoded event holds in memory beyond
// its data: the Event and Position values (and the slack of their growing
// slices), the type string, the data's allocation rounding.
const eventOverhead = 256

// budget bounds the memory one decode holds: the decoded events of every
// log of one input, each counted as its data plus eventOverhead.
type budget struct {
	max, used int64
	sessions  int // sessions charged (chargeSession)
}

// sessionOverhead approximates what one session of an input holds in
// memory until its file is imported, beyond its events: the decoded log and
// header, the prepared import, the store's per-session state in the
// transaction and the import's result. A file of many tiny sessions is
// bounded by it.
const sessionOverhead = 2 << 10

// chargeSession counts one more session of the input against the budget.
func (b *budget) chargeSession() error {
	if b == nil {
		return nil
	}
	b.sessions++
	b.used += sessionOverhead
	return b.check()
}

// check fails when the budget is spent.
func (b *budget) check() error {
	if b.used <= b.max {
		return nil
	}
	if b.sessions > 1 {
		return fmt.Errorf("the file is too large to import: its %d sessions so far and their decoded events need more than the import memory budget of %s (a file is imported in one transaction; split it, or raise --import-memory)", b.sessions, sizeText(b.max))
	}
	return fmt.Errorf("the session is too large to import: its decoded events need more than the import memory budget of %s", sizeText(b.max))
}

func newBudget(max int64) *budget { return &budget{max: max} }

// charge counts events against the budget.
func (b *budget) charge(events []core.Event) error {
	if b == nil {
		return nil
	}
	for i := range events {
		b.used += int64(len(events[i].Data)+8*len(events[i].SourceEventSeqs)) + eventOverhead
	}
	return b.check()
}

// release returns the charge of events dropped again (a rolled-back frame).
func (b *budget) release(events []core.Event) {
	if b == nil {
		return
	}
	for i := range events {
		b.used -= int64(len(events[i].Data)+8*len(events[i].SourceEventSeqs)) + eventOverhead
	}
}

// sizeText writes a byte count for people: "64 MiB", "1500 bytes".
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
