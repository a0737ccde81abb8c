package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"prism/core"
	"prism/sources/dsh"
)

// Detect reports whether head, the first bytes of a file, is a Codex
// rollout: its first non-blank line is a session_meta line (or the earliest
// rollouts' flat header), as Sniff says. A first line longer than head is
// judged by its opening: a "session_meta" type and no prism or dsh session
// header.
func Detect(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	line, _, found := bytes.Cut(head, []byte("\n"))
	if !found && !json.Valid(line) { // a first line longer than head
		return bytes.Contains(line, []byte(`"type":"session_meta"`)) && bytes.Contains(line, []byte(`"payload":`))
	}
	return Sniff(line)
}

// Format is the Codex rollout as a dsh.Foreign, for import and watch: it is
// detected by content, in plain rollouts and in .jsonl.zst archives.
func Format() dsh.Foreign {
	return dsh.Foreign{Name: SourceName, Detect: Detect, Read: func(r *bufio.Reader, lim dsh.Limits) ([]*dsh.Log, error) {
		_, l, err := ReadLog(r, lim, "")
		if err != nil {
			return nil, err
		}
		return []*dsh.Log{l}, nil
	}, ReadPath: func(path string, r *bufio.Reader, lim dsh.Limits) ([]*dsh.Log, error) {
		ro, l, err := ReadLog(r, lim, IDFromFileName(path))
		if err != nil {
			return nil, err
		}
		return []*dsh.Log{atPath(ro, l, path)}, nil
	}, Tail: newTail}
}

// atPath completes the log l of the rollout ro read from the file at
// path: its file, and its parent when it is a child thread.
func atPath(ro *Rollout, l *dsh.Log, path string) *dsh.Log {
	l.Source.File = path
	if ro.ParentThreadID != "" && ro.ParentThreadID != l.Header.ID {
		asChild(l, path, ro.ParentThreadID)
	}
	return l
}

// eventOverhead is what one decoded event costs beyond its data, as
// sessionlog counts it against Limits.MaxMemoryBytes.
const eventOverhead = 160

// ReadLog decodes a whole rollout read from r within lim (zero fields:
// sessionlog's defaults): a line longer than MaxLineBytes, a text longer
// than MaxLogBytes or decoded events past MaxMemoryBytes fail the file
// naming the line. A malformed line is kept as source/raw and reported in
// the log's Notes; a last line without its newline that is not JSON is a
// torn tail (Torn), left out. id is the session id when no session_meta
// names one (IDFromFileName).
func ReadLog(r *bufio.Reader, lim dsh.Limits, id string) (*Rollout, *dsh.Log, error) {
	rr := newRolloutReader(lim, id)
	if err := rr.feed(r); err != nil {
		return nil, nil, err
	}
	return finish(rr.d, rr.l, rr.n)
}

// rolloutReader is ReadLog's state between lines: a whole read feeds it
// the rollout once, a LineTail (Tail) what the file grew by each time.
type rolloutReader struct {
	lim        dsh.Limits
	d          *Decoder
	l          *dsh.Log // Notes, Pos and Torn so far
	total, mem int64
	// seedMem is mem's count of a fork's seed events still held by the
	// seed's decoder (d.seed): they join mem once the seed ends.
	seedMem int64
	n       int // lines read
	buf     []byte
	done    bool // a torn last line ended the text
}

func newRolloutReader(lim dsh.Limits, id string) *rolloutReader {
	return &rolloutReader{lim: lim.OrDefault(), d: NewDecoder(Options{ID: id}), l: &dsh.Log{}}
}

// feed decodes r's lines, up to its end.
func (rr *rolloutReader) feed(r *bufio.Reader) error {
	lim, d, l := rr.lim, rr.d, rr.l
	for !rr.done {
		line, err := r.ReadSlice('\n')
		buf := append(rr.buf[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > lim.MaxLineBytes {
				return &dsh.FormatError{Frame: -1, Offset: -1, Line: rr.n + 1,
					Reason: fmt.Sprintf("line is longer than the limit of %d bytes", lim.MaxLineBytes)}
			}
			line, err = r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		rr.buf = buf
		if err != nil && err != io.EOF {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: rr.n + 1, Reason: "read: " + err.Error()}
		}
		if len(buf) == 0 && err == io.EOF {
			return nil
		}
		rr.n++
		n := rr.n
		if len(buf) > lim.MaxLineBytes+1 {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: n,
				Reason: fmt.Sprintf("line is longer than the limit of %d bytes", lim.MaxLineBytes)}
		}
		if rr.total += int64(len(buf)); rr.total > lim.MaxLogBytes {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: n,
				Reason: fmt.Sprintf("rollout is longer than the limit of %d bytes", lim.MaxLogBytes)}
		}
		last := err == io.EOF
		text := bytes.TrimSpace(buf)
		if last && len(text) > 0 && !json.Valid(text) {
			l.Torn = fmt.Sprintf("line %d: incomplete last line (%d bytes, no newline)", n, len(buf))
			rr.done = true
			return nil
		}
		before := len(d.out.Events)
		seedBefore := 0
		if d.seed != nil {
			seedBefore = len(d.seed.out.Events)
		}
		malformed := len(d.out.Malformed)
		d.Line(buf)
		if d.seed == nil {
			rr.seedMem = 0 // ended: its events are d's, counted below
		} else {
			for _, e := range d.seed.out.Events[min(seedBefore, len(d.seed.out.Events)):] {
				rr.seedMem += int64(len(e.Data)) + eventOverhead
			}
		}
		for _, e := range d.out.Malformed[malformed:] {
			l.Notes = append(l.Notes, e.Error()+" (kept raw)")
		}
		for _, e := range d.out.Events[before:] {
			rr.mem += int64(len(e.Data)) + eventOverhead
			l.Pos = append(l.Pos, dsh.Position{Frame: -1, Line: n})
		}
		if rr.mem > lim.MaxMemoryBytes {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: n,
				Reason: fmt.Sprintf("decoded events exceed the memory budget of %d MiB (--import-memory)", lim.MaxMemoryBytes>>20)}
		}
		if last {
			rr.done = true
		}
	}
	return nil
}

// finish ends the read of n lines that d decoded into l (Decoder.Finish)
// and gives the log its header, events and source.
func finish(d *Decoder, l *dsh.Log, n int) (*Rollout, *dsh.Log, error) {
	ro, err := d.Finish()
	if err != nil {
		return nil, nil, &dsh.FormatError{Frame: -1, Offset: -1, Reason: err.Error()}
	}
	l.Header, l.Events = ro.Header, ro.Events
	l.Source = &core.SourceInfo{Kind: SourceName, Version: ro.CLIVersion, Cwd: ro.Header.Cwd, GitBranch: ro.GitBranch, ForkedFrom: ro.ForkedFromID}
	for len(l.Pos) < len(l.Events) {
		l.Pos = append(l.Pos, dsh.Position{Frame: -1, Line: n})
	}
	return ro, l, nil
}
