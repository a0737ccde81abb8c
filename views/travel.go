package views

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"prism/core"
)

// Time travel: a session shown as it was right after any event, the
// landmarks a replay moves between, and the window of a long transcript
// around a target. Everything here is derived from a fold of the log.

// Mark kinds: the chapters of a session's scrubber.
const (
	markError       = "error"       // a call whose result is an error
	markEdit        = "edit"        // a call whose card shows a file change
	markInterrupted = "interrupted" // a call stopped without its result, or closed by crash repair or an abort
)

// Mark is one chapter mark: a moment worth jumping to, and the card it
// belongs to.
type Mark struct {
	Seq  int64
	Kind string
	Card string // the card's element id
	Tool string
}

// Chapters are a log's landmarks: where each turn starts, where each tool
// call is made, and the chapter marks, all in seq order. Last is the log's
// last seq (-1 when it is empty).
type Chapters struct {
	Last  int64
	Turns []int64
	Calls []int64
	Marks []Mark
}

// Chapters derives the landmarks of everything t has folded. Edits are
// the calls whose call view is a diff (presented once per card, as the
// card itself would be); errors and interruptions are Card.State and
// Card.Outcome's rules.
func (t *Timeline) Chapters() Chapters {
	ch := Chapters{Last: t.lastSeq}
	for _, s := range t.segs {
		if r, ok := s.(*TurnRow); ok {
			ch.Turns = append(ch.Turns, r.Seq)
		}
	}
	for _, c := range t.cards {
		first := c.ResultSeq
		if c.HasCall {
			first = c.CallSeq
			ch.Calls = append(ch.Calls, c.CallSeq)
		} else {
			ch.Calls = append(ch.Calls, c.ResultSeq)
		}
		if c.HasCall {
			if cv := c.presentCall(); cv != nil && cv.Card() == core.CardDiff {
				ch.Marks = append(ch.Marks, Mark{Seq: first, Kind: markEdit, Card: c.ID, Tool: c.Name})
			}
		}
		switch {
		case c.Result == nil && c.Stopped:
			ch.Marks = append(ch.Marks, Mark{Seq: c.StopSeq, Kind: markInterrupted, Card: c.ID, Tool: c.Name})
		case c.Result != nil && c.Outcome() != "":
			ch.Marks = append(ch.Marks, Mark{Seq: c.ResultSeq, Kind: markInterrupted, Card: c.ID, Tool: c.Name})
		case c.Result != nil && c.State() == StateError:
			ch.Marks = append(ch.Marks, Mark{Seq: c.ResultSeq, Kind: markError, Card: c.ID, Tool: c.Name})
		}
	}
	slices.Sort(ch.Calls)
	slices.SortStableFunc(ch.Marks, func(a, b Mark) int { return cmp.Compare(a.Seq, b.Seq) })
	return ch
}

// Step kinds: what Chapters.Step moves by.
const (
	StepEvent = "event"
	StepCall  = "call"
	StepMark  = "mark"
	StepError = "error"
	StepTurn  = "turn"
)

// Step returns the seq one step from at lands on, moving by kind (StepEvent,
// StepCall, StepMark, StepError, StepTurn) forward (dir > 0) or back, and
// the mark it lands on, if any. ok is false when there is nothing that way.
// An at below zero stands at the end (the live page).
func (c *Chapters) Step(at int64, kind string, dir int) (seq int64, mark *Mark, ok bool) {
	if at < 0 || at > c.Last {
		at = c.Last
	}
	pick := func(seqs []int64) (int64, bool) {
		if dir > 0 {
			i, _ := slices.BinarySearch(seqs, at+1)
			if i < len(seqs) {
				return seqs[i], true
			}
			return 0, false
		}
		i, _ := slices.BinarySearch(seqs, at)
		if i > 0 {
			return seqs[i-1], true
		}
		return 0, false
	}
	switch kind {
	case StepEvent:
		n := at - 1
		if dir > 0 {
			n = at + 1
		}
		return n, nil, n >= 0 && n <= c.Last
	case StepCall:
		seq, ok = pick(c.Calls)
		return seq, nil, ok
	case StepTurn:
		seq, ok = pick(c.Turns)
		return seq, nil, ok
	case StepMark, StepError:
		var found *Mark
		for i := range c.Marks {
			m := &c.Marks[i]
			if kind == StepError && m.Kind != markError {
				continue
			}
			if dir > 0 && m.Seq > at {
				return m.Seq, m, true
			}
			if dir < 0 && m.Seq < at {
				found = m
			}
		}
		if found != nil {
			return found.Seq, found, true
		}
	}
	return 0, nil, false
}

// ParseAt reads a page's at parameter against a log whose last seq in the
// reader's scope is of. "" is the live page (-1), and so is one past the
// last event; anything else that is not a seq in the log is an error that
// names it (core.CodeInvalid).
func ParseAt(raw string, of int64) (int64, error) {
	if raw == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, core.Errorf(core.CodeInvalid, "at must be an event's seq (a whole number from 0), not %s", QuoteInput(raw))
	}
	switch {
	case n == of+1:
		return -1, nil
	case n > of:
		if of < 0 {
			return 0, core.Errorf(core.CodeInvalid, "at %d is past the end of the session: it has no events", n)
		}
		return 0, core.Errorf(core.CodeInvalid, "at %d is past the end of the session: its last event is %d", n, of)
	}
	return n, nil
}

// QuoteInput quotes what a reader typed for an error message: cleaned,
// one line, bounded.
func QuoteInput(raw string) string {
	s, _ := cutLine(clean(strings.ReplaceAll(raw, "\n", " ")), 40)
	return strconv.Quote(s)
}

// ParsePlace reads a session page's target from its query: ?call= (and
// ?card=), ?card= alone, or ?event=. At is left at -1: it needs the log
// (ParseAt). A bad event, or a call and an event at once, is a
// core.CodeInvalid error that names it.
func ParsePlace(q url.Values) (Place, error) {
	p := LivePlace()
	p.Call, p.Card = q.Get(ParamCall), q.Get(ParamCard)
	if raw := q.Get(ParamEvent); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			return LivePlace(), core.Errorf(core.CodeInvalid, "event must be an event's seq (a whole number from 0), not %s", QuoteInput(raw))
		}
		if p.Call != "" || p.Card != "" {
			return LivePlace(), core.Errorf(core.CodeInvalid, "name a call (call, card) or an event, not both")
		}
		p.Event = n
	}
	return p, nil
}

// ParseStep reads a transport step, KIND followed by + or - (a "+" left
// unescaped in a query reads as a space): kind is StepEvent, StepCall,
// StepMark, StepError or StepTurn, dir ±1. "" is no step.
func ParseStep(raw string) (kind string, dir int, err error) {
	if raw == "" {
		return "", 0, nil
	}
	kind, dir = raw[:len(raw)-1], 1
	switch raw[len(raw)-1] {
	case '+', ' ':
	case '-':
		dir = -1
	default:
		kind = ""
	}
	switch kind {
	case StepEvent, StepCall, StepMark, StepError, StepTurn:
		return kind, dir, nil
	}
	return "", 0, core.Errorf(core.CodeInvalid, "step must be event, call, mark, error or turn followed by + or -, not %s", QuoteInput(raw))
}

// Replay is a session as a reader sees it at a point of its log: T is the
// fold up to At (everything when At < 0, the live page), Chapters the
// landmarks of everything the reader may see, up to Of.
type Replay struct {
	T        *Timeline
	Chapters Chapters
	At, Of   int64
	// Running is whether the session (everything the reader may see) is
	// running: its live page follows it.
	Running bool

	h    core.SessionHeader
	p    Presenter
	full *Timeline // the fold of everything, once needed
	// reader is what the replay's pages show their reader, whichever fold
	// (live or at an event) they render.
	reader Reader
}

// setReader gives the current fold the replay's reader. A replay at an
// event is read-only regardless: its awaiting cards show the wait as it
// was then, without decision forms.
func (r *Replay) setReader() {
	rd := r.reader
	rd.ReadOnly = rd.ReadOnly || r.At >= 0
	if r.At >= 0 && r.At < r.Of {
		// At an event, nested children show what they had by then.
		rd.ChildrenUntil = max(r.T.Summary().LastTime, 1)
	} else if rd.ScopedChildren {
		// The whole of a scoped link: its children as of its last event.
		rd.ChildrenUntil = max(r.T.Summary().LastTime, 1)
	}
	r.T.SetReader(rd)
}

// NewReplay folds the events a reader may see (a whole log, or a share
// link's scope: seq order, from 0) at at (< 0: live), for the page and its
// transport. A share scoped at K passes the events up to K, so its page
// counts "of K" and never further. rd is what its pages show the reader.
func NewReplay(h core.SessionHeader, events []core.Event, at int64, p Presenter, rd Reader) *Replay {
	full := Fold(h, events, p)
	r := &Replay{T: full, Chapters: full.Chapters(), At: -1, Of: full.LastSeq(),
		Running: full.Summary().Status == core.StatusRunning, h: h, p: p, full: full, reader: rd}
	r.Move(events, at)
	return r
}

// NewReplayOf is NewReplay for a caller that has the chapters of these
// very events (and whether the session runs) from an earlier replay: a
// page at an event then folds only the events up to it.
func NewReplayOf(h core.SessionHeader, events []core.Event, at int64, p Presenter, rd Reader, ch Chapters, running bool) *Replay {
	r := &Replay{Chapters: ch, At: -1, Of: lastSeq(events), Running: running, h: h, p: p, reader: rd}
	r.Move(events, at)
	return r
}

func lastSeq(events []core.Event) int64 {
	if len(events) == 0 {
		return -1
	}
	return events[len(events)-1].Seq
}

// Move refolds the replay at at (< 0: live) over the same events; the
// fold at an event is read-only.
func (r *Replay) Move(events []core.Event, at int64) {
	defer r.setReader()
	if at >= 0 && at < r.Of {
		r.T, r.At = Fold(r.h, events[:EventsThrough(events, at)], r.p), at
		return
	}
	if r.full == nil {
		r.full = Fold(r.h, events, r.p)
	}
	r.T, r.At = r.full, -1
	if at >= 0 {
		r.At = r.Of
	}
}

// EventsThrough returns how many of events (in seq order) have a seq at
// or below seq.
func EventsThrough(events []core.Event, seq int64) int {
	n, _ := slices.BinarySearchFunc(events, seq+1, func(e core.Event, s int64) int {
		switch {
		case e.Seq < s:
			return -1
		case e.Seq > s:
			return 1
		}
		return 0
	})
	return n
}

// Target finds what a place names on t — a card by element id (Card), a
// call's card (Call, and Card among its cards), or the element an event
// made or changed (Event) — and the index of the transcript segment that
// holds it. It returns a nil node when the place names no target, and a
// core.CodeNotFound error naming what is missing.
func (t *Timeline) Target(p Place) (Node, int, error) {
	switch {
	case p.Call != "":
		cards := t.CardsOfRef(p.Call)
		if len(cards) == 0 {
			return nil, 0, core.Errorf(core.CodeNotFound, "the session has no call %q%s", clean(p.Call), t.atNote(p))
		}
		c := cards[0]
		if p.Card != "" {
			c = nil
			for _, k := range cards {
				if k.ID == p.Card {
					c = k
				}
			}
			if c == nil {
				return nil, 0, core.Errorf(core.CodeNotFound, "call %q has no card %q%s", clean(p.Call), clean(p.Card), t.atNote(p))
			}
		}
		return c, t.segmentOf(c), nil
	case p.Card != "":
		c := t.Card(p.Card)
		if cards := t.CardsOfRef(p.Card); c == nil && len(cards) > 0 {
			c = cards[0]
		}
		if c == nil {
			return nil, 0, core.Errorf(core.CodeNotFound, "the session has no card %q%s", clean(p.Card), t.atNote(p))
		}
		return c, t.segmentOf(c), nil
	case p.Event >= 0:
		if p.Event > t.lastSeq {
			if t.lastSeq < 0 {
				return nil, 0, core.Errorf(core.CodeNotFound, "the session has no event %d: it has no events%s", p.Event, t.atNote(p))
			}
			return nil, 0, core.Errorf(core.CodeNotFound, "the session has no event %d: its last is %d", p.Event, t.lastSeq)
		}
		n, i := t.nodeOfEvent(p.Event)
		return n, i, nil
	}
	return nil, 0, nil
}

func (t *Timeline) atNote(p Place) string {
	if p.At >= 0 {
		return " at event " + strconv.FormatInt(p.At, 10)
	}
	return ""
}

// segmentOf returns the index of the segment holding c (-1 if none).
func (t *Timeline) segmentOf(c *Card) int {
	for i, s := range t.segs {
		switch x := s.(type) {
		case *Step:
			if x == c.Step && slices.Contains(x.Items, Item(c)) {
				return i
			}
		case *row:
			if x.Item == Item(c) {
				return i
			}
		}
	}
	return -1
}

// nodeOfEvent returns the element event seq made or changed, and its
// segment: the item it appended or morphed, the step or turn it opened or
// closed; for an event with no element of its own (a usage chunk, a
// replacement the page does not show), the next element after it.
func (t *Timeline) nodeOfEvent(seq int64) (Node, int) {
	for i, s := range t.segs {
		switch x := s.(type) {
		case *TurnRow:
			if x.Seq == seq || x.Ended && x.EndSeq == seq {
				return x, i
			}
		case *Step:
			if x.Seq == seq || x.Ended && x.EndSeq == seq {
				return x, i
			}
			for _, it := range x.Items {
				if itemHas(it, seq) {
					return it, i
				}
			}
		case *row:
			if itemHas(x.Item, seq) {
				return x.Item, i
			}
		}
	}
	for i, s := range t.segs {
		if segmentSeq(s) >= seq {
			return s, i
		}
	}
	if n := len(t.segs); n > 0 {
		return t.segs[n-1], n - 1
	}
	return nil, -1
}

// itemHas reports whether event seq made or changed item it.
func itemHas(it Item, seq int64) bool {
	switch x := it.(type) {
	case *messageItem:
		return x.Seq == seq
	case *assistantItem:
		return x.Seq <= seq && seq <= x.EndSeq
	case *RawItem:
		return x.Event.Seq == seq
	case *Card:
		return x.HasCall && x.CallSeq == seq || x.Result != nil && x.ResultSeq == seq || x.Stopped && x.StopSeq == seq
	}
	return false
}

// segmentCost is what a segment counts against a window: one, and one per
// item of a step.
func segmentCost(s Segment) int {
	if st, ok := s.(*Step); ok {
		return 1 + len(st.Items)
	}
	return 1
}

// WindowAround returns the segments [start, end) of a window of about
// window items around segment i: it grows both ways, a segment at a time,
// while the next one fits (segment i is always in).
func WindowAround(segs []Segment, i, window int) (start, end int) {
	if i < 0 || i >= len(segs) {
		return 0, 0
	}
	start, end = i, i+1
	used := segmentCost(segs[i])
	for {
		grew := false
		if end < len(segs) && used+segmentCost(segs[end]) <= window {
			used += segmentCost(segs[end])
			end++
			grew = true
		}
		if start > 0 && used+segmentCost(segs[start-1]) <= window {
			start--
			used += segmentCost(segs[start])
			grew = true
		}
		if !grew {
			return start, end
		}
	}
}

// Awaiting returns the cards of t that wait for a person's decision, in
// element id order.
func (t *Timeline) Awaiting() []*Card {
	var out []*Card
	for _, c := range t.byElem {
		if c.State() == StateAwaiting {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *Card) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// RenderAwaitingFor renders the cards of t that wait for a decision as one
// outer morph, with their decision forms: what a page whose cards were
// rendered at an event (read-only) needs once it follows the session live.
// It returns no patch when t is read-only or no card waits.
func RenderAwaitingFor(ctx context.Context, t *Timeline, l Links) ([]Patch, error) {
	r := NewR(t, l)
	if r.ReadOnly {
		return nil, nil
	}
	var b strings.Builder
	for _, c := range t.Awaiting() {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if err := CardComponent(NewCardViewIn(c, r)).Render(ctx, &b); err != nil {
			return nil, err
		}
	}
	if b.Len() == 0 {
		return nil, nil
	}
	return []Patch{{Mode: "outer", HTML: b.String()}}, nil
}
