package core

// ValidateLog checks a loaded log the way dsh validates a session seed:
// every event has a valid envelope, seq equals its index, data is lossless,
// surface transitions are legal, message events are well formed, and no
// event has an unknown type without the ignorable marker. The error names
// the offending seq and the reason.
//
// (Placeholder: the session work fills this in.)
func ValidateLog(h SessionHeader, events []Event) error { return nil }

// InterruptedTurnClosers returns the deterministic events dsh's crash repair
// appends to a log whose last turn is open: a synthetic tool/result per
// pending call (TOOL_OUTCOME_UNKNOWN when its tool/call was logged,
// TOOL_NOT_STARTED otherwise), step/end if a step is open, then
// turn/end{interrupted}; all reuse the last event's time. A log whose last
// turn is closed needs none (nil).
//
// (Placeholder: the session work fills this in.)
func InterruptedTurnClosers(events []Event) []Event { return nil }
