package core

import (
	"encoding/json"
	"fmt"
)

// The codes of a failed fork, dsh's SessionForkErrorCode. dsh's fifth,
// SESSION_NOT_LIVE (a live session object that is gone), does not arise in
// prism: a fork is cut from the stored log, never from a running session.
const (
	// CodeOpenTurn: the boundary lies inside a turn that has no turn/end.
	CodeOpenTurn = "OPEN_TURN"
	// CodeSessionNotFound: the source session does not exist.
	CodeSessionNotFound = "SESSION_NOT_FOUND"
	// CodeSessionAlreadyExists: the fork's id is taken.
	CodeSessionAlreadyExists = "SESSION_ALREADY_EXISTS"
	// CodeInvalidBoundary: the boundary is not a turn/end of the source
	// (past its end, negative, or another event).
	CodeInvalidBoundary = "INVALID_BOUNDARY"
)

// ForkErrorName is the name of a fork's errors (dsh's SessionForkError).
const ForkErrorName = "SessionForkError"

// ForkError returns a fork's error: a *Error named SessionForkError with
// one of the Code* fork codes above and the text.
func ForkError(code, format string, args ...any) *Error {
	return NewError(ForkErrorName, code, format, args...)
}

// ForkBoundary says where a fork is cut: after the turn/end of turn
// AtTurn, or after the event AtSeq, which must be a turn/end. Exactly one
// is set. AtTurn 0 is the start of the session: the events before its
// first turn (a rerun from scratch).
type ForkBoundary struct {
	AtTurn *int
	AtSeq  *int64
}

// String describes the boundary for error texts: "turn 3" or "seq 41".
func (b ForkBoundary) String() string {
	if b.AtSeq != nil {
		return fmt.Sprintf("seq %d", *b.AtSeq)
	}
	if b.AtTurn != nil {
		return fmt.Sprintf("turn %d", *b.AtTurn)
	}
	return "no boundary"
}

// ForkPrefix returns how many events of a source log a fork at b
// inherits: the prefix through the turn/end of the chosen turn (for AtTurn
// 0, the events before the first turn/start). It follows dsh's
// SessionStore.fork: a completed-turn prefix only — a boundary inside a
// turn without a turn/end is OPEN_TURN, a turn or seq the log does not
// have, or a seq that is not a turn/end, INVALID_BOUNDARY. source names
// the session in the texts.
func ForkPrefix(source string, events []Event, b ForkBoundary) (int, error) {
	switch {
	case (b.AtTurn == nil) == (b.AtSeq == nil):
		return 0, ForkError(CodeInvalidBoundary, "cannot fork session %q: give exactly one boundary, atTurn or atSeq", source)
	case b.AtTurn != nil && *b.AtTurn < 0:
		return 0, ForkError(CodeInvalidBoundary, "cannot fork session %q at turn %d: a turn number is 0 or more", source, *b.AtTurn)
	case b.AtSeq != nil && (*b.AtSeq < 0 || *b.AtSeq >= int64(len(events))):
		return 0, ForkError(CodeInvalidBoundary, "cannot fork session %q at seq %d: its log has events 0 to %d", source, *b.AtSeq, len(events)-1)
	}
	if b.AtSeq != nil {
		e := &events[*b.AtSeq]
		if e.Type == EventTurnEnd {
			return int(*b.AtSeq) + 1, nil
		}
		// Inside a turn that is open there, or between turns?
	scan:
		for i := *b.AtSeq; i >= 0; i-- {
			switch events[i].Type {
			case EventTurnStart:
				return 0, ForkError(CodeOpenTurn, "cannot fork session %q at seq %d: it lies inside turn %d, which has not ended there (fork at a turn/end)", source, *b.AtSeq, turnOf(&events[i]))
			case EventTurnEnd:
				break scan
			}
		}
		return 0, ForkError(CodeInvalidBoundary, "cannot fork session %q at seq %d: event %d is a %s, not a turn/end", source, *b.AtSeq, *b.AtSeq, e.Type)
	}
	n := *b.AtTurn
	started, completed := false, 0
	for i := range events {
		e := &events[i]
		switch e.Type {
		case EventTurnStart:
			if n == 0 {
				return i, nil
			}
			if turnOf(e) == n {
				started = true
			}
		case EventTurnEnd:
			completed++
			if turnOf(e) == n {
				return i + 1, nil
			}
		}
	}
	switch {
	case n == 0:
		return len(events), nil // no turn at all: the whole log
	case started:
		return 0, ForkError(CodeOpenTurn, "cannot fork session %q at turn %d: the turn is still open (it has no turn/end)", source, n)
	}
	return 0, ForkError(CodeInvalidBoundary, "cannot fork session %q at turn %d: past the end, the session has %d completed turns", source, n, completed)
}

// turnOf returns the turn number of a turn/start or turn/end (0 when its
// data does not say).
func turnOf(e *Event) int {
	var d struct {
		Turn int `json:"turn"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return d.Turn
}

// ForkSeed builds a fork's log: the source's first n events (ForkPrefix),
// copied, then session/end-seed at time now unless the prefix already ends
// with one. h is the fork's header; its SeedLength is set to n, the
// inherited events. The seed is validated as dsh validates any seed
// (ValidateLog): a source log that is not a valid seed is CodeInvalid,
// naming the event.
func ForkSeed(h SessionHeader, events []Event, n int, now int64) (SessionHeader, []Event, error) {
	if n < 0 || n > len(events) {
		return h, nil, ForkError(CodeInvalidBoundary, "fork seed of %d events: the source has %d", n, len(events))
	}
	seed := make([]Event, n, n+1)
	for i := range events[:n] {
		seed[i] = cloneEvent(events[i])
	}
	if n == 0 || seed[n-1].Type != EventSessionEndSeed {
		seed = append(seed, Event{Type: EventSessionEndSeed, Seq: int64(n), Time: now, Data: json.RawMessage(`{}`)})
	}
	length := int64(n)
	h.SeedLength = &length
	if err := ValidateLog(h, seed); err != nil {
		return h, nil, Errorf(CodeInvalid, "fork %q of session %q: the inherited events are not a valid seed: %w", h.ID, h.ParentSession, err)
	}
	return h, seed, nil
}
