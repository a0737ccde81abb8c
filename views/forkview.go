package views

import (
	"encoding/json"

	"prism/core/notes"
)

// ReplayedView marks a fork's call answered with its source's recorded
// result (a KindReplayed note): the card says "replayed from <source>
// #seq", linking the source's call.
type ReplayedView struct {
	Source, Short string
	Seq           int64
	URL           string
}

// replayedView returns the replayed mark of call callID as the page at
// r.Seq shows it (nil when the call ran, or the page shows no notes).
func replayedView(callID string, r R) *ReplayedView {
	if callID == "" {
		return nil
	}
	for _, n := range r.Notes {
		if n.Kind != notes.KindReplayed || n.CallID != callID || !n.AppliesAt(r.Seq) {
			continue
		}
		var d notes.ReplayedData
		if json.Unmarshal(n.Data, &d) != nil || d.SourceSession == "" {
			continue
		}
		return &ReplayedView{Source: clean(d.SourceSession), Short: shortID(clean(d.SourceSession)), Seq: d.SourceSeq,
			URL: SessionEventURL(d.SourceSession, d.SourceSeq)}
	}
	return nil
}

// ForkLink is one fork of a session as its pages link it.
type ForkLink struct {
	ID, Title, Status, URL string
	// Inherited is the number of events the fork inherited (its
	// seedLength).
	Inherited int64
	Calls     int64
	Created   string
	// Forks are the fork's own forks (the tree page).
	Forks []ForkLink
}

// forkOf reports whether the session of t is a fork (a parent that is
// not a subagent's, and a seed length), and the turn it was cut after:
// the last turn that ended inside its seed (0: before any turn).
func forkOf(t *Timeline) (parent string, turn int, ok bool) {
	h := t.Header()
	if h.ParentSession == "" || h.Origin == "subagent" || h.SeedLength == nil {
		return "", 0, false
	}
	for _, s := range t.Segments() {
		if tr, isTurn := s.(*TurnRow); isTurn && tr.Ended && tr.EndSeq < *h.SeedLength {
			turn = tr.Turn
		}
	}
	return h.ParentSession, turn, true
}

// NewForkLink is the link to one fork: its id, title (as pages show it),
// status, calls, inherited events and creation time.
func NewForkLink(id, title, status string, calls, inherited, createdAt int64) ForkLink {
	return ForkLink{ID: clean(id), Title: displayTitle(title, id), Status: clean(status), URL: SessionURL(id),
		Calls: calls, Inherited: inherited, Created: dateTime(createdAt)}
}

// DisplayTitle is a session's title as pages show it: its title, else
// "Session" and the start of its id.
func DisplayTitle(title, id string) string { return displayTitle(title, id) }
