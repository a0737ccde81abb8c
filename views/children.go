package views

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
	from := sort.Search(len(events), func(i int) bool { return events[i].Seq > last })
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
	v, _ := nestChild(c, r, func(int) bool { return true })
	return v
}

// nestChild builds the nested child of card c: its summary, and the views
// of those of its shown cards whose index (among the shown) want selects;
// shown lists every shown card's element id and version (nestedCard). v
// is nil when no link applies; shown is nil when the child is not found.
func nestChild(c *Card, r R, want func(i int) bool) (v *ChildView, shown []nestedCard) {
	if r.Children == nil || c.CallID == "" {
		return nil, nil
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
		return nil, nil
	}
	// A share link's pages (and their saved file) nest the child without
	// a way to it: its page is the owner's, which a link never reveals.
	shared := r.Links.Shared() || r.Links.Offline()
	v = &ChildView{ID: clean(link.Child), Background: link.Background, Inferred: link.Inferred, DetailsID: "child-" + c.ID}
	if !shared {
		v.URL = SessionURL(link.Child)
	}
	cl := r.Children[link.Child]
	if cl == nil {
		return v, nil
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
		Seq: tl.LastSeq(), Highlights: r.Highlights, presenter: r.presenter}
	if shared {
		cr.Links = OfflineLinks() // no download of the child's calls: their URLs are the owner's
	}
	shown = make([]nestedCard, 0, len(cards))
	for i, cc := range cards {
		id := v.DetailsID + "-" + cc.ID // unique on the parent's page
		shown = append(shown, nestedCard{id: id, version: cardVersion(cc)})
		if !want(i) {
			continue
		}
		cv := NewCardViewIn(cc, cr)
		cv.ID = id
		cv.InspectURL = ""
		v.Cards = append(v.Cards, cv)
	}
	return v, shown
}

// nestedCard is one nested card as a parent's page shows it: its element
// id and what its rendering depends on (cardVersion).
type nestedCard struct{ id, version string }

// cardVersion changes whenever a nested card's rendering may: its state,
// its result, its close.
func cardVersion(c *Card) string {
	return c.State() + "/" + strconv.FormatInt(c.ResultSeq, 10) + "/" + strconv.FormatInt(c.StopSeq, 10) + "/" + strconv.FormatBool(c.Result != nil)
}

// NestedSent is what the pages following a parent were last sent of the
// child nested in one of its cards (RenderChildMovedFor); the zero value
// is nothing known (the whole card is sent).
type NestedSent struct {
	known bool
	// head is what, changed, takes the whole card: the child found or
	// not, its status, where it links, whether calls are hidden or none
	// shown.
	head    string
	earlier int
	cards   []nestedCard
}

// RenderChildMovedFor renders, as t's reader sees it, what brings the
// child nested in call's card on the pages following t from prev (what
// they were last sent) to the child's state now: a morph of its summary
// line, of its earlier-calls line when that count moved, of each shown
// card that changed, the removal of cards that left the window and the
// append of new ones — a cost bounded by what changed, not by the child's
// log. When more changed (the child's status, a first card, prev unknown)
// it is the whole card, as RenderCallCardsFor renders it. next is what the
// pages show after. ok is false when t has no such card.
//
// The patches assume every page was sent prev: t's reader must nest a
// child log that only its caller extends (a live hub's own copy), so the
// state the pages were sent is the state of the fold.
func RenderChildMovedFor(ctx context.Context, t *Timeline, l Links, callID string, prev NestedSent) (patches []Patch, next NestedSent, ok bool, err error) {
	cs := t.CardsByCallID(callID)
	if len(cs) == 0 {
		return nil, prev, false, nil
	}
	r := NewR(t, l)
	full := func() ([]Patch, NestedSent, bool, error) {
		p, ok, err := RenderCallCardsFor(ctx, t, l, []string{callID})
		if err != nil || !ok {
			return nil, NestedSent{}, ok, err
		}
		n := NestedSent{}
		if len(cs) == 1 {
			n = nestedState(nestChild(cs[0], r, func(int) bool { return false }))
		}
		return []Patch{p}, n, true, nil
	}
	if !prev.known || len(cs) != 1 {
		return full()
	}
	old := make(map[string]string, len(prev.cards))
	for _, c := range prev.cards {
		old[c.id] = c.version
	}
	v, shown := nestChild(cs[0], r, func(int) bool { return false })
	next = nestedState(v, shown)
	if v == nil || !v.Found || next.head != prev.head {
		return full()
	}
	changed := map[string]bool{}
	for _, c := range shown {
		if ver, ok := old[c.id]; !ok || ver != c.version {
			changed[c.id] = true
		}
	}
	if len(changed) > 0 {
		// The views of the shown cards that are new or changed only.
		v, _ = nestChild(cs[0], r, func(i int) bool { return changed[shown[i].id] })
	}
	var b strings.Builder
	if err := childSummary(v).Render(ctx, &b); err != nil {
		return nil, prev, false, err
	}
	patches = append(patches, Patch{Mode: "outer", HTML: b.String()})
	if v.Earlier != prev.earlier {
		b.Reset()
		if err := childEarlier(v).Render(ctx, &b); err != nil {
			return nil, prev, false, err
		}
		patches = append(patches, Patch{Mode: "outer", HTML: b.String()})
	}
	now := make(map[string]bool, len(shown))
	for _, c := range shown {
		now[c.id] = true
	}
	for _, c := range prev.cards {
		if !now[c.id] {
			patches = append(patches, Patch{Selector: "#" + c.id, Mode: "remove"})
		}
	}
	var appended strings.Builder
	for _, cv := range v.Cards {
		b.Reset()
		if err := CardComponent(cv).Render(ctx, &b); err != nil {
			return nil, prev, false, err
		}
		if _, had := old[cv.ID]; had {
			patches = append(patches, Patch{Mode: "outer", HTML: b.String()})
			continue
		}
		if appended.Len() > 0 {
			appended.WriteByte('\n')
		}
		appended.WriteString(b.String())
	}
	if appended.Len() > 0 {
		patches = append(patches, Patch{Selector: "#" + v.DetailsID + "-body", Mode: "append", HTML: appended.String()})
	}
	return patches, next, true, nil
}

// nestedState is what a page shows of nested child v whose shown cards
// are shown.
func nestedState(v *ChildView, shown []nestedCard) NestedSent {
	if v == nil {
		return NestedSent{known: true, head: "none"}
	}
	head := fmt.Sprintf("%t|%s|%t|%s|%t|%t", v.Found, v.Status, v.Background, v.URL, v.Earlier > 0, len(shown) > 0)
	return NestedSent{known: true, head: head, earlier: v.Earlier, cards: shown}
}
