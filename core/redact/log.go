package redact

import (
	"slices"

	"prism/core"
)

// Log is one session's log redacted as it grows (a live child that a
// share link nests): each event is redacted once, when it comes, and the
// walker's state (the calls that touch a .env file) carries from one
// Extend to the next — but for the chunks of a stream still open at the
// log's end, which are redacted again with the rest of their run once the
// log grows past them (their text is withheld until the message that
// finalizes them is in the same pass). So at every length its events equal
// Session's redaction of the whole log. It is not safe for concurrent use.
type Log struct {
	w      *Walker
	header core.SessionHeader
	events []core.Event // redacted
	// open is the log's trailing run of chunks as given, while the walker
	// left it open (their text withheld in events).
	open []core.Event
}

// Log returns an empty redacted log of the session whose header is h.
func (r *Redactor) Log(h core.SessionHeader) *Log {
	w := r.Walker()
	return &Log{w: w, header: w.Header(h)}
}

// Header returns the session's header, redacted.
func (l *Log) Header() core.SessionHeader { return l.header }

// Len returns how many events the log holds.
func (l *Log) Len() int { return len(l.events) }

// Extend redacts events, which continue the log, and returns the whole
// redacted log and the index from which it differs from what Extend
// returned before: the old length, unless an open stream's chunks at the
// old end were redacted again (then the index of its first chunk). The
// slices Extend returned before are never written.
func (l *Log) Extend(events []core.Event) (all []core.Event, from int) {
	from = len(l.events)
	in := events
	if len(l.open) > 0 {
		from -= len(l.open)
		in = append(l.open, events...)
		l.events = slices.Clip(l.events[:from]) // the next append copies: earlier results keep their bytes
		l.w.openRun = false                     // the run starts after a finalized event (or at the start)
	}
	l.events = append(l.events, l.w.Events(in)...)
	l.open = nil
	if l.w.openRun {
		k := len(in)
		for k > 0 && in[k-1].Type == core.EventAssistantChunk {
			k--
		}
		l.open = slices.Clone(in[k:])
	}
	return l.events[:len(l.events):len(l.events)], from
}
