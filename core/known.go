package core

import "unicode/utf8"

// appendedFactsOf returns the facts of an event Append made from data, or
// nil when only a decode of its data can tell them.
func appendedFactsOf(typ string, data any) *EventFacts {
	if f, ok := appendedFacts(typ, data); ok {
		return &f
	}
	return nil
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
		f.model = jsonText(d.Message.Source.Model)
	default:
		return f, false
	}
	f.texts = appendedTexts(data)
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
