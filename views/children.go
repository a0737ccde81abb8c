package views

import (
	"strconv"
	"sync"

	"prism/core"
	"prism/core/notes"
)

// ChildLog is a subagent's log as its parent's pages nest it (Reader.
// Children): the child's header and events, folded once on demand. A
// live child grows in place (Extend): the parent's pages and hubs that
// hold it see its new events without loading or folding the log again.
// Events is the log as it was built; once a ChildLog may be extended, read
// it with Log.
type ChildLog struct {
	Header core.SessionHeader
	Events []core.Event

	mu   sync.Mutex
	full *Timeline // the fold of every event, once needed
}

// Log returns the child's events as they are now (the slice is never
// written again: a reader may keep it).
func (c *ChildLog) Log() []core.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Events[:len(c.Events):len(c.Events)]
}

// LastSeq returns the seq of the child's last event (-1: none).
func (c *ChildLog) LastSeq() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.Events) == 0 {
		return -1
	}
	return c.Events[len(c.Events)-1].Seq
}

// Extend appends events that continue the child's log — those at or
// before its last seq are skipped — and folds them into its fold when it
// has one: the cost of the new events, whatever the log's length. It is
// safe beside the pages reading the child. It returns false, taking
// nothing, when the events do not continue the log (a gap).
func (c *ChildLog) Extend(events []core.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := int64(-1)
	if len(c.Events) > 0 {
		last = c.Events[len(c.Events)-1].Seq
	}
	from := 0
	for from < len(events) && events[from].Seq <= last {
		from++
	}
	for i, e := range events[from:] {
		if e.Seq != last+1+int64(i) {
			return false
		}
	}
	events = events[from:]
	if len(events) == 0 {
		return true
	}
	// Appending never writes what an earlier Log returned: those slices
	// end at their length, and the array only grows past it.
	c.Events = append(c.Events, events...)
	if c.full != nil {
		c.full.ApplyAll(events)
	}
	return true
}

// foldUntil returns the child's fold of the events at or before time
// until (0: all of them). c.mu is held: the fold is read under it.
func (c *ChildLog) foldUntil(until int64, p Presenter) *Timeline {
	if until <= 0 || len(c.Events) == 0 || c.Events[len(c.Events)-1].Time <= until {
		if c.full == nil {
			c.full = Fold(c.Header, c.Events, p)
		}
		return c.full
	}
	// A child event belongs to the first parent event at or after its own
	// time, clamped to be monotone: once one event is past until, the
	// rest are too.
	n := 0
	for n < len(c.Events) && c.Events[n].Time <= until {
		n++
	}
	return Fold(c.Header, c.Events[:n], p)
}

// Cards returns every card of the fold in the order they were opened.
func (t *Timeline) Cards() []*Card { return t.cards }

// ChildView is the nested child of a subagent call's card: a summary
// line that expands into the child's own cards, and the way to its page.
type ChildView struct {
	ID string
	// URL is the child's page ("" on a share link, which nests the child
	// without revealing where its owner reads it).
	URL string
	// Found is false when the linked child does not exist (deleted, or
	// never stored): the card says "child not found".
	Found      bool
	Background bool
	Inferred   bool
	Calls      int64
	Errors     int64
	Tokens     string
	// Status is running, finished or interrupted.
	Status   string
	Duration string
	// DetailsID is the id of the expanding element (its open state
	// survives morphs: static/app.js).
	DetailsID string
	// Cards are the child's latest MaxNestedCards cards; Earlier counts
	// those before them (on the child's own page).
	Cards   []*CardView
	Earlier int
}

// MaxNestedCards bounds the cards a parent's page nests per child: a
// parent of many long children stays light (the rest are on the child's
// page, one click away).
const MaxNestedCards = 10

// childStatus words a child's status on its parent's card: running,
// interrupted, else finished (a one-shot child's ended, or idle between
// turns).
func childStatus(s string) string {
	switch s {
	case core.StatusRunning, core.StatusInterrupted:
		return s
	}
	return "finished"
}

// childView returns the nested child of card c (nil when no link note
// applies to its call at the seq the page shows, or the reader nests no
// children: share links, saved files).
func childView(c *Card, r R) *ChildView {
	if r.Children == nil || c.CallID == "" {
		return nil
	}
	var link *notes.LinkData
	for _, n := range r.Notes {
		if n.Kind != notes.KindLink || n.CallID != c.CallID || !n.AppliesAt(r.Seq) {
			continue
		}
		if d, err := notes.ParseLink(n.Data); err == nil {
			link = &d
		}
	}
	if link == nil {
		return nil
	}
	// A share link's pages (and their saved file) nest the child without
	// a way to it: its page is the owner's, which a link never reveals.
	shared := r.Links.Shared() || r.Links.Offline()
	v := &ChildView{ID: clean(link.Child), Background: link.Background, Inferred: link.Inferred, DetailsID: "child-" + c.ID}
	if !shared {
		v.URL = SessionURL(link.Child)
	}
	cl := r.Children[link.Child]
	if cl == nil {
		return v
	}
	v.Found = true
	// The fold is read under the child's lock: a live child may be
	// extended meanwhile (ChildLog.Extend).
	cl.mu.Lock()
	defer cl.mu.Unlock()
	tl := cl.foldUntil(r.ChildrenUntil, r.presenter)
	sum := tl.Summary()
	v.Calls, v.Errors = sum.Calls, sum.Errors
	v.Tokens = strconv.FormatInt(sum.InputTokens+sum.OutputTokens, 10)
	v.Status = childStatus(sum.Status)
	if sum.LastTime > sum.FirstTime && sum.FirstTime > 0 {
		v.Duration = duration(sum.LastTime - sum.FirstTime)
	}
	cards := tl.Cards()
	if len(cards) > MaxNestedCards {
		v.Earlier = len(cards) - MaxNestedCards
		cards = cards[v.Earlier:]
	}
	cr := R{SessionID: link.Child, Cwd: cl.Header.Cwd, Links: SessionLinks(link.Child), ReadOnly: true, Prices: r.Prices,
		Seq: tl.LastSeq(), presenter: r.presenter}
	if shared {
		cr.Links = OfflineLinks() // no download of the child's calls: their URLs are the owner's
	}
	for _, cc := range cards {
		cv := NewCardViewIn(cc, cr)
		cv.ID = v.DetailsID + "-" + cc.ID // unique on the parent's page
		cv.InspectURL = ""
		v.Cards = append(v.Cards, cv)
	}
	return v
}
