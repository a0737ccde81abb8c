package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"prism/core"
	"prism/sources/dsh"
)

// knownTypes are the record types of Claude Code's transcript union; Detect
// takes a first line of one of them (or any record with a sessionId) as
// this format.
var knownTypes = map[string]bool{
	"user": true, "assistant": true, "summary": true, "system": true, "file-history-snapshot": true,
	"queue-operation": true, "progress": true, "custom-title": true, "ai-title": true, "agent-name": true,
	"agent-setting": true, "permission-mode": true, "mode": true, "pr-link": true, "last-prompt": true,
	"bridge-session": true, "attachment": true,
}

// Detect reports whether head, the first bytes of a file, is a Claude Code
// transcript: its first line is a JSON object that is not a prism or dsh
// session header ({"type":"session",…}) and that names a sessionId or is of
// one of Claude Code's record types. A first line longer than head is
// judged by its opening: not a session header, and a "sessionId" key.
func Detect(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	line, _, found := bytes.Cut(head, []byte("\n"))
	if !found && !json.Valid(line) { // a first line longer than head
		return !bytes.HasPrefix(line, []byte(`{"type":"session"`)) && bytes.Contains(line, []byte(`"sessionId":`))
	}
	var r struct {
		Type      string  `json:"type"`
		SessionID *string `json:"sessionId"`
	}
	if json.Unmarshal(line, &r) != nil || r.Type == "session" {
		return false
	}
	return r.SessionID != nil || knownTypes[r.Type]
}

// Format is the Claude Code transcript as a dsh.Foreign, for import:
// ReadFileWith and DecodeNamed detect it by content.
func Format() dsh.Foreign {
	return dsh.Foreign{Name: Source, Detect: Detect, Read: readLogs, ReadPath: readPath, Related: related, Tail: newTail}
}

// readPath reads the transcript at path: the main one of a session, or a
// subagent's (agent-<id>.jsonl), which becomes a child session (see
// ReadFile).
func readPath(path string, r *bufio.Reader, lim dsh.Limits) ([]*dsh.Log, error) {
	agent := AgentID(path)
	if agent == "" {
		return readMain(r, lim, path)
	}
	l, err := readLog(r, lim, true, nil)
	if err != nil {
		return nil, err
	}
	l.Source.File = path
	asChild(l, path, agent)
	return []*dsh.Log{l}, nil
}

func readLogs(r *bufio.Reader, lim dsh.Limits) ([]*dsh.Log, error) {
	return readMain(r, lim, "")
}

// readMain reads a main transcript (from the file at path, "" when
// unknown): its session, then a child session per inline sidechain.
func readMain(r *bufio.Reader, lim dsh.Limits, path string) ([]*dsh.Log, error) {
	side := newSidechains()
	l, err := readLog(r, lim, false, side)
	if err != nil {
		return nil, err
	}
	l.Source.File = path
	side.noteCalls(l.Events)
	return append([]*dsh.Log{l}, side.logs(l.Header.ID, path)...), nil
}

// eventOverhead is what one decoded event costs beyond its data, as
// sessionlog counts it against Limits.MaxMemoryBytes.
const eventOverhead = 160

// ReadLog decodes a whole transcript read from r. Its limits (zero fields:
// sessionlog's defaults) bound one line (MaxLineBytes: a longer line fails
// the file, naming it), the text (MaxLogBytes) and the decoded events
// (MaxMemoryBytes). A malformed line is kept as source/raw and reported in
// the log's Notes; a last line without its newline that does not decode is
// a torn tail (Torn), left out. A transcript with no sessionId anywhere is
// an error.
func ReadLog(r *bufio.Reader, lim dsh.Limits) (*dsh.Log, error) {
	return readLog(r, lim, false, nil)
}

// readLog is ReadLog; sidechain decodes a subagent's own transcript, whose
// lines are all isSidechain.
func readLog(r *bufio.Reader, lim dsh.Limits, sidechain bool, side *sidechains) (*dsh.Log, error) {
	lr := newLogReader(lim, sidechain, side)
	if err := lr.feed(r); err != nil {
		return nil, err
	}
	return finish(lr.d, lr.l, lr.n)
}

// logReader is readLog's state between lines: a whole read feeds it the
// file once, a LineTail (Tail) what the file grew by each time.
type logReader struct {
	lim        dsh.Limits
	d          *Decoder
	l          *dsh.Log // Notes, Pos and Torn so far
	side       *sidechains
	total, mem int64
	n          int // lines read
	buf        []byte
	done       bool // a torn last line ended the text
}

func newLogReader(lim dsh.Limits, sidechain bool, side *sidechains) *logReader {
	d := NewDecoder()
	d.sidechain = sidechain
	return &logReader{lim: lim.OrDefault(), d: d, l: &dsh.Log{}, side: side}
}

// feed decodes r's lines, up to its end.
func (lr *logReader) feed(r *bufio.Reader) error {
	lim, d, l := lr.lim, lr.d, lr.l
	for !lr.done {
		line, err := r.ReadSlice('\n')
		buf := append(lr.buf[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > lim.MaxLineBytes {
				return &dsh.FormatError{Frame: -1, Offset: -1, Line: lr.n + 1,
					Reason: fmt.Sprintf("line is longer than the limit of %d bytes", lim.MaxLineBytes)}
			}
			line, err = r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		lr.buf = buf
		if err != nil && err != io.EOF {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: lr.n + 1, Reason: err.Error()}
		}
		if len(buf) == 0 && err == io.EOF {
			return nil
		}
		lr.n++
		n := lr.n
		if len(buf) > lim.MaxLineBytes+1 {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: n,
				Reason: fmt.Sprintf("line is longer than the limit of %d bytes", lim.MaxLineBytes)}
		}
		if lr.total += int64(len(buf)); lr.total > lim.MaxLogBytes {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: n,
				Reason: fmt.Sprintf("transcript is longer than the limit of %d bytes", lim.MaxLogBytes)}
		}
		last := err == io.EOF
		text := bytes.TrimSpace(buf)
		if last && len(text) > 0 && !json.Valid(text) {
			l.Torn = fmt.Sprintf("line %d: incomplete last line (%d bytes, no newline)", n, len(buf))
			lr.done = true
			return nil
		}
		if lr.side != nil {
			lr.side.line(n, buf)
		}
		before := len(d.events)
		if lerr := d.Line(n, buf); lerr != nil {
			l.Notes = append(l.Notes, lerr.Error()+" (kept raw)")
		}
		for _, e := range d.events[before:] {
			lr.mem += int64(len(e.Data)) + eventOverhead
			l.Pos = append(l.Pos, dsh.Position{Frame: -1, Line: n})
		}
		if lr.mem > lim.MaxMemoryBytes {
			return &dsh.FormatError{Frame: -1, Offset: -1, Line: n,
				Reason: fmt.Sprintf("decoded events exceed the memory budget of %d MiB (--import-memory)", lim.MaxMemoryBytes>>20)}
		}
		if last {
			lr.done = true
		}
	}
	return nil
}

// finish ends the read of n lines that d decoded into l: the assistant
// group still waiting for its last line is written, and the log takes
// the header, the events and the source.
func finish(d *Decoder, l *dsh.Log, n int) (*dsh.Log, error) {
	before := len(d.events)
	d.Flush()
	for range d.events[before:] {
		l.Pos = append(l.Pos, dsh.Position{Frame: -1, Line: n})
	}
	h, ok := d.Header()
	if !ok {
		return nil, &dsh.FormatError{Frame: -1, Offset: -1, Reason: "no line of this Claude Code transcript names its sessionId"}
	}
	l.Header, l.Events = h, d.Events()
	info := d.Info()
	l.Source = &core.SourceInfo{Kind: Source, Version: info.Version, Cwd: info.Cwd, GitBranch: info.GitBranch, Title: info.Title}
	return l, nil
}

// snapshot is finish on a copy of the reader's state, which goes on
// unchanged: the log of the lines read so far, and how many of its first
// events no later line changes.
func (lr *logReader) snapshot() (*dsh.Log, int, error) {
	l := *lr.l
	l.Pos, l.Notes = slices.Clip(l.Pos), slices.Clip(l.Notes)
	settled := 0
	if lr.d.timed {
		settled = len(lr.d.events)
	}
	out, err := finish(lr.d.clone(), &l, lr.n)
	return out, settled, err
}
