package dsh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"prism/core"
)

// scanMode says how a scanner treats a record that does not decode or does
// not continue the seq.
type scanMode int

const (
	// modeTolerant is dsh's plain-log rule: the first problem opens a torn
	// tail, which becomes corruption if a later record holds a turn/end.
	modeTolerant scanMode = iota
	// modeStrict fails on the first problem (records inside complete frames).
	modeStrict
	// modeStop silently stops at the first problem (a torn frame's prefix).
	modeStop
)

// errStop is returned by record in modeStop when the scanner stops.
var errStop = errors.New("stop")

type scanner struct {
	log    Log
	header bool
	issue  *FormatError
	mode   scanMode
	budget *budget // nil: unbounded (a Tail's caller bounds its reads)
}

func (s *scanner) headerLine(line []byte, pos Position) error {
	if IsLabelsDataset(line) {
		return errAt(pos, "a labels dataset, not a session log (prism export --labels writes it; import reads session logs)")
	}
	h, err := DecodeHeader(line)
	if err != nil {
		return errAt(pos, "%v", err)
	}
	s.log.Header = h
	s.log.DataChecked = true // its events come through DecodeRecord only
	s.header = true
	return nil
}

func hasTurnEnd(events []core.Event) bool {
	for i := range events {
		if events[i].Type == core.EventTurnEnd {
			return true
		}
	}
	return false
}

// turnEndMarker is in every line that can decode to a turn/end event, but
// for lines that escape characters of its type.
var turnEndMarker = []byte("turn/end")

// record consumes one complete record line. Errors are *FormatError; a
// budget overrun wraps errOverBudget.
func (s *scanner) record(line []byte, pos Position) error {
	if !s.header {
		return s.headerLine(line, pos)
	}
	if s.issue != nil && !bytes.Contains(line, turnEndMarker) && bytes.IndexByte(line, '\\') < 0 {
		return nil // past a torn-tail issue only a later turn/end matters
	}
	decoded, err := DecodeRecord(line)
	if err != nil {
		fe := errAt(pos, "%v", err)
		switch s.mode {
		case modeStrict:
			return fe
		case modeStop:
			return errStop
		}
		if s.issue == nil {
			s.issue = fe
		}
		return nil
	}
	if s.issue != nil {
		if hasTurnEnd(decoded) {
			return s.issue
		}
		return nil
	}
	start := len(s.log.Events)
	for _, e := range decoded {
		if want := int64(len(s.log.Events)); e.Seq != want {
			s.log.Events = s.log.Events[:start]
			s.log.Pos = s.log.Pos[:start]
			fe := errAt(pos, "%s", seqMismatch(want, e.Seq))
			switch s.mode {
			case modeStrict:
				return fe
			case modeStop:
				return errStop
			}
			s.issue = fe
			if hasTurnEnd(decoded) {
				return fe
			}
			return nil
		}
		s.log.Events = append(s.log.Events, e)
		s.log.Pos = append(s.log.Pos, pos)
	}
	if err := s.budget.charge(decoded); err != nil {
		return &FormatError{Frame: pos.Frame, Offset: -1, Line: pos.Line, Reason: err.Error(), overBudget: true}
	}
	return nil
}

// seqMismatch says how a record's seq got fails to continue a log that
// needs want next: a repeated seq is a duplicate, a later one a gap.
func seqMismatch(want, got int64) string {
	if got < want {
		return fmt.Sprintf("duplicate seq: seq %d appears again (expected seq %d)", got, want)
	}
	return fmt.Sprintf("seq gap: expected seq %d, got %d", want, got)
}

// LabelsDataset is the "dataset" of every line of prism's labels dataset
// (prism export --labels): what tells such a file apart from a session
// log, by content.
const LabelsDataset = "prism.labels/v1"

// IsLabelsDataset reports whether a line is a row of the labels dataset.
func IsLabelsDataset(line []byte) bool {
	if !bytes.Contains(line, []byte(`"dataset"`)) {
		return false
	}
	var row struct {
		Dataset string `json:"dataset"`
	}
	return json.Unmarshal(line, &row) == nil && row.Dataset == LabelsDataset
}

// sessionMarker is in every session header line: DecodeHeader takes the
// "type" member's raw value, which must be exactly "session".
var sessionMarker = []byte(`"session"`)

// isHeaderLine reports whether a record line is a session header, well
// formed or not: an object whose "type" is "session" as DecodeHeader reads
// it. Only lines holding the marker are decoded to tell.
func isHeaderLine(line []byte) bool {
	if !bytes.Contains(line, sessionMarker) {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(line, &m) == nil && string(m["type"]) == `"session"`
}

// DecodeJSONL decodes a plain JSONL log (prism's export or dsh's
// session.jsonl) from r, one line at a time. A final line without a newline
// is a torn tail and is ignored; see the package comment for the rest of
// the torn-tail rule. It reads one session: a second session header is an
// error (Decode and ReadFile read every session of a prism JSONL file).
func DecodeJSONL(r io.Reader, lim Limits) (*Log, error) {
	lim = lim.OrDefault()
	logs, err := decodeJSONL(r, lim, newBudget(lim.MaxMemoryBytes), false)
	if err != nil {
		return nil, err
	}
	return logs[0], nil
}

// decodeJSONL decodes a plain JSONL text. With multi set (a file of its
// own, as opposed to a zip entry) it is prism's JSONL, which may hold many
// sessions: each session header line after the first ends one session and
// starts the next, and dsh's torn-tail rule applies to each session's own
// lines (a header is never a torn tail). Without multi a second header is
// an error. Line numbers count from the start of r; Limits.MaxLogBytes
// bounds each session; b bounds every session's events together (they are
// imported in one transaction).
func decodeJSONL(r io.Reader, lim Limits, b *budget, multi bool) ([]*Log, error) {
	lr := newLineReader(r, lim.MaxLineBytes)
	s := &scanner{mode: modeTolerant, budget: b}
	var logs []*Log
	seen := map[string]int{} // session id → the line of its header
	finish := func() {
		if s.issue != nil {
			s.log.Torn = s.issue.Error() + "; the tail from there is ignored (no later turn/end)"
		}
		l := s.log
		logs = append(logs, &l)
	}
	var total int64
	for lineNo := 1; ; lineNo++ {
		pos := Position{Frame: -1, Line: lineNo}
		line, nl, err := lr.next()
		switch {
		case errors.Is(err, errLongLine):
			return nil, errAt(pos, "line is longer than the limit of %d bytes", lim.MaxLineBytes)
		case errors.Is(err, io.EOF):
			if !s.header {
				return nil, errAt(Position{Frame: -1}, "empty file: no session header")
			}
		case err != nil:
			return nil, errAt(pos, "read: %v", err)
		}
		if err != nil {
			break
		}
		if s.header && nl && isHeaderLine(line) {
			if !multi {
				return nil, errAt(pos, "a second session header: this log holds one session (only a prism JSONL file of its own may hold several)")
			}
			finish()
			s = &scanner{mode: modeTolerant, budget: b}
			total = 0
		}
		total += int64(len(line)) + 1
		if total > lim.MaxLogBytes {
			return nil, errAt(pos, "log is larger than the limit of %d bytes", lim.MaxLogBytes)
		}
		if !nl {
			switch {
			case !s.header:
				return nil, errAt(pos, "truncated: the header line has no trailing newline")
			case s.issue == nil:
				s.log.Torn = fmt.Sprintf("line %d has no trailing newline (a torn write); ignored", lineNo)
			}
			break
		}
		if !s.header {
			if err := s.record(line, pos); err != nil {
				return nil, err
			}
			s.log.HeaderLine = lineNo
			id := s.log.Header.ID
			if first, ok := seen[id]; ok {
				return nil, errAt(pos, "session %s appears a second time (its first header is on line %d); a file holds each session once", id, first)
			}
			seen[id] = lineNo
			if err := b.chargeSession(); err != nil {
				return nil, &FormatError{Frame: -1, Offset: -1, Line: lineNo, Reason: err.Error(), overBudget: true}
			}
			continue
		}
		if err := s.record(line, pos); err != nil {
			return nil, err
		}
	}
	finish()
	return logs, nil
}
