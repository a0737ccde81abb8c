package views

import (
	"context"
	"encoding/json"
	"slices"

	"prism/core/notes"
)

// ReplayedView marks a fork's call answered with its source's recorded
// result (a KindReplayed note): the card says "replayed from <source>
// #seq", linking the source's call — on a share link only "replayed":
// a link never names a fork's source (its note carries none,
// Server.shareNotes), nor links the owner's pages.
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
		if json.Unmarshal(n.Data, &d) != nil {
			continue
		}
		if d.SourceSession == "" || r.Links.Shared() {
			return &ReplayedView{} // a link's: no source, no owner URL
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

// maxForkEnds bounds the turn ends the transport's "fork here" knows: past
// them (a session of thousands of turns) it is offered at the first ones
// only, and the turn rows still offer it everywhere.
const maxForkEnds = 5000

// transportForkOf returns the transport's fork form URL and the seqs of the
// session's turn/end events as a JSON array ("", "" when the page offers
// no fork).
func transportForkOf(t *Timeline, l Links) (url, ends string) {
	r := NewR(t, l)
	if r.ForkURL == "" {
		return "", ""
	}
	var seqs []int64
	for _, s := range t.Segments() {
		if tr, ok := s.(*TurnRow); ok && tr.Ended && len(seqs) < maxForkEnds {
			seqs = append(seqs, tr.EndSeq)
		}
	}
	b, _ := json.Marshal(seqs)
	if seqs == nil {
		b = []byte("[]")
	}
	return r.ForkURL, string(b)
}

// atTurnEnd reports whether the transport sits at a turn/end (At is one of
// ends, a JSON array of seqs).
func atTurnEnd(at int64, ends string) bool {
	var seqs []int64
	if json.Unmarshal([]byte(ends), &seqs) != nil {
		return false
	}
	return slices.Contains(seqs, at)
}

// forkLabel is how a fork's header names a session: its id when short
// enough to read, else its first eight characters.
func forkLabel(id string) string {
	if len(id) <= 16 {
		return id
	}
	return shortID(id)
}

// SessionIdentitySelector selects a session page's identity stats (its
// id, cwd, origin, forks and creation): the first stats list of the
// header, not the live one (#session-stats). It has no id of its own, so
// the pages' markup stays as it was.
const SessionIdentitySelector = "#session-head > dl.stats:not(.live-stats)"

// RenderSessionForksFor renders a session page's identity stats, its
// forks among them, as t's reader has them now: the patch a live page
// gets when the session's forks change (a fork note on it). ok is false
// for a share link's or a saved page, which name no forks.
func RenderSessionForksFor(ctx context.Context, t *Timeline, l Links) (p Patch, ok bool, err error) {
	if l.Shared() || l.Offline() {
		return Patch{}, false, nil
	}
	h := newSessionHeadFor(t, l)
	html, err := Render(ctx, sessionIdentity(&h))
	if err != nil {
		return Patch{}, false, err
	}
	return Patch{Selector: SessionIdentitySelector, Mode: "outer", HTML: html}, true, nil
}
