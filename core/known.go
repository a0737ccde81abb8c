package core

import "unicode/utf8"

// knownData is what a Session knew of an event's data when it appended it,
// carried with the event to the store and the live feed so they need not
// walk the JSON again: that data is the compact, lossless encoding Snapshot
// produced, and — when the appended value had core's type for the event —
// the event's facts (see FactsOf).
type knownData struct {
	data     []byte // the Data it describes: a copy whose Data was replaced is not vouched for
	facts    EventFacts
	hasFacts bool
}

// Checked reports whether e.Data is the encoding a core.Session checked and
// compacted when it appended e (lossless JSON, compact form), so a store
// may skip checking it again. It holds for the events Append returns and
// for their copies, as long as Data is the slice the session produced;
// events read from storage or decoded from JSON are not checked.
func (e *Event) Checked() bool {
	k := e.known
	return k != nil && len(k.data) == len(e.Data) && (len(k.data) == 0 || &k.data[0] == &e.Data[0])
}

// carriedFacts returns the facts a Session computed for e, if it did.
func (e *Event) carriedFacts() (*EventFacts, bool) {
	if e.known != nil && e.known.hasFacts && e.Checked() {
		return &e.known.facts, true
	}
	return nil, false
}

// know records what Append knows of e: its Data was produced by Snapshot
// from data, and data's facts when data has core's type for e.Type — the
// same facts FactsOf would decode from e.Data.
func (e *Event) know(data any) {
	e.known = &knownData{data: e.Data}
	if f, ok := appendedFacts(e.Type, data); ok {
		e.known.facts, e.known.hasFacts = f, true
	}
}

// appendedFacts returns the facts of appended data of type typ without
// decoding its encoding; ok is false when only the encoding can tell. The
// strings are what a decode of the encoding would give (encoding/json writes
// each byte of invalid UTF-8 as U+FFFD).
func appendedFacts(typ string, data any) (f EventFacts, ok bool) {
	if !summaryReads(typ) && !carriesCallID(typ) {
		return EventFacts{}, true // FactsOf reads nothing of these
	}
	switch d := data.(type) {
	case TurnEnd:
		return appendedFacts(typ, &d)
	case SessionTitle:
		return appendedFacts(typ, &d)
	case Message:
		return appendedFacts(typ, &d)
	case ToolCall:
		return appendedFacts(typ, &d)
	case ToolResultData:
		return appendedFacts(typ, &d)
	case AssistantMessage:
		return appendedFacts(typ, &d)
	case *TurnEnd:
		if typ != EventTurnEnd || d == nil {
			return f, false
		}
		f.reasonKind = jsonText(d.Reason.Kind)
	case *SessionTitle:
		if typ != EventSessionTitle || d == nil {
			return f, false
		}
		f.title = jsonText(d.Title)
	case *Message:
		if typ != EventUserMessage || d == nil || hasUnknownBlock(d.Content) {
			return f, false
		}
		f.userSource = jsonText(d.Source.Kind)
		for _, b := range d.Content {
			if t, isText := b.(*TextBlock); isText {
				f.userTexts = append(f.userTexts, jsonText(t.Text))
			}
		}
	case *ToolCall:
		if typ != EventToolCall || d == nil {
			return f, false
		}
		f.callID = jsonText(d.CallID)
	case *ToolResultData:
		if typ != EventToolResult || d == nil || hasUnknownBlock(d.Message.Content) {
			return f, false
		}
		f.callID = jsonText(d.Message.Source.CallID)
		if b, isResult := d.Message.ToolResultOf(); isResult {
			f.isError = b.IsError
		}
		if d.Error != nil {
			f.errorCode = jsonText(d.Error.Code)
		}
	case *AssistantMessage:
		if typ != EventAssistantMessage || d == nil {
			return f, false
		}
		if d.Usage != nil {
			u := *d.Usage
			f.usage = &u
		}
	default:
		return f, false
	}
	return f, true
}

// hasUnknownBlock reports whether c holds a block whose JSON is its own
// raw bytes (only a decode tells what they say).
func hasUnknownBlock(c Content) bool {
	for _, b := range c {
		if _, unknown := b.(*UnknownBlock); unknown {
			return true
		}
	}
	return false
}

// jsonText returns s as encoding it to JSON and decoding it back gives it:
// each byte that is not part of valid UTF-8 becomes U+FFFD.
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}
