package views

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/core/price"
)

// Assets are the URLs of the static files a page links.
type Assets struct {
	CSS, HighlightCSS, JS, Datastar, Icon string
	Filter                                string // the session page's filter bar
	// Travel is the session page's navigation module (static/travel.js).
	Travel string
	// Compare is the compare page's module (static/compare.js).
	Compare string
}

// PageMeta is what every page's layout needs.
type PageMeta struct {
	Title  string
	Assets Assets
	// Public marks a page anyone with a share link sees: its top bar does
	// not link the owner's session list.
	Public bool
}

// R is the render context of transcript components: which session they
// belong to, its working directory, the URLs its reader follows (the
// owner's when Links is the zero value), and the element marked as the
// page's current one (a jump's target), if any.
type R struct {
	SessionID string
	Cwd       string
	Links     Links
	// ReadOnly renders cards without their decision forms (an awaiting
	// card still shows it waits).
	ReadOnly bool
	// Prices, when set, adds costs to the token lines of steps and turns.
	Prices price.Table
	// Current is the id of the page's current element (a jump's target).
	Current string
	// Notes and Labels are the Reader's; Seq is the seq the page shows
	// (the labels that apply there are shown).
	Notes        []notes.Note
	Labels       bool
	LabelChoices []string
	Seq          int64
	// ForkURL is where the "fork here" forms post (ForksURL); "" when the
	// page offers none (share links, saved files, no runner that forks).
	ForkURL string
	// Children and ChildrenUntil are the Reader's: the subagents whose
	// cards a subagent call's card nests (owner pages, and share links
	// made with their children).
	Children      map[string]*ChildLog
	ChildrenUntil int64
	// Highlights is the Reader's memo of highlighted code (nil: none).
	Highlights *HighlightCache
	presenter  Presenter
}

// current reports whether the element id is the page's current element.
func (r R) current(id string) bool { return r.Current != "" && r.Current == id }

// NewR returns the render context of a session's timeline for a reader
// following links. It is read-only — no decision forms — when the timeline
// is (Timeline.SetReadOnly: a session this server does not run), on a
// share link and in a saved file.
func NewR(t *Timeline, l Links) R {
	h := t.Header()
	ro := t.reader.ReadOnly || l.Shared() || l.Offline()
	r := R{SessionID: h.ID, Cwd: h.Cwd, Links: l, ReadOnly: ro, Prices: t.reader.Prices, Seq: t.LastSeq(), Highlights: t.reader.Highlights, presenter: t.p}
	if !l.Shared() && !l.Offline() {
		// Labels never leave the owner's pages: not on a share link,
		// not in a saved file. Nor do nested children.
		r.Notes, r.Labels, r.LabelChoices = t.reader.Notes, t.reader.Labels, t.reader.LabelChoices
		if t.reader.Fork {
			r.ForkURL = ForksURL(h.ID)
		}
		r.Children, r.ChildrenUntil = t.reader.Children, t.reader.ChildrenUntil
	} else if t.reader.SharedNotes {
		// A share link's reader holds only what the link may show: its
		// children only when the link nests them, redacted as the rest.
		r.Notes = t.reader.Notes
		r.Children, r.ChildrenUntil = t.reader.Children, t.reader.ChildrenUntil
	}
	return r
}

// SessionHeadView is the session page's header: identity, and the
// session's core.Summary (the values the session list shows) with the count
// of pending cards.
type SessionHeadView struct {
	// Labels are the labels on the whole session (owner pages only);
	// ShowLabels says the header shows its labels block (with LabelForm,
	// when set, for a new one).
	Labels       []LabelView
	LabelForm    *LabelForm
	LabelChoices []string
	ShowLabels   bool
	// Attention are the attention rules' open firings on the whole
	// session (owner pages only); ShowAttention, the header holds their
	// element (live pages update it).
	Attention         []AttentionView
	ShowAttention     bool
	ID, Title, Status string
	Cwd, Parent       string
	// Path is the session's ancestors, root first, when it is a subagent
	// (parent › child › grandchild; Reader.Ancestors); the owner's pages
	// only.
	Path []Link
	// Source says what the session was read from, small beside the title
	// (nil: a session of prism's own, or dsh's; owner pages only).
	Source           *SourceLineView
	Created, Updated string
	// Cost is the session's cost under the server's price table ("" with
	// none); CostNote names models the table does not price.
	Cost, CostNote string
	ParentURL      string
	ExportURL      string
	ExportHTMLURL  string
	Summary        core.Summary
	Pending        int
	Duration       string
	LastSeq        int64
	Live           bool
	// Shared is set on a share link's page: no owner controls, no links
	// to other sessions.
	Shared bool
	// Snapshot is set on the page of a share link scoped up to an event
	// (Of): it says so, and that later events are not shared.
	Snapshot bool
	// At and Of place a replay: the page shows the session right after
	// event At of the Of the reader may see; At < 0 is the live page.
	At, Of  int64
	LiveURL string
	// Replay is set on a page with a transport: the header says where the
	// replay stands.
	Replay bool
	// ForkOf is the session this one was forked from (its parent, when
	// not a subagent's) and ForkTurn the turn it was cut after; Forks are
	// this session's forks and ForksURL the page of their tree (owner
	// pages only).
	ForkOf, ForkOfURL string
	// CompareSourceURL compares a fork with its source (/compare/SOURCE/FORK);
	// set with ForkOf.
	CompareSourceURL string
	ForkTurn         int
	Forks            []ForkLink
	ForksURL         string
}

// EarlierView is the placeholder that loads the segments before Before.
type EarlierView struct {
	Before   int64 // seq of the first segment already shown
	Count    int   // segments not shown
	URL      string
	StartURL string    // the window at the start of the session
	Loaded   []Segment // filled when the placeholder is replaced
	Next     *EarlierView
	R        R
}

// ElemID returns the placeholder's element id.
func (e *EarlierView) ElemID() string { return "earlier-" + strconv.FormatInt(e.Before, 10) }

// LaterView is the placeholder that loads the segments after After, up to
// those the page's stream appends (segments opened after Until).
type LaterView struct {
	After  int64 // seq of the last segment already shown
	Until  int64 // the page's seq when it was rendered
	Count  int   // segments not shown
	URL    string
	EndURL string    // the latest window
	Loaded []Segment // filled when the placeholder is replaced
	Next   *LaterView
	R      R
}

// ElemID returns the placeholder's element id.
func (l *LaterView) ElemID() string { return "later-" + strconv.FormatInt(l.After, 10) }

// SessionPageView is the inspector page.
type SessionPageView struct {
	Meta      PageMeta
	R         R
	Head      SessionHeadView
	Earlier   *EarlierView
	Segments  []Segment
	Later     *LaterView
	StreamURL string // "" for a page without a live stream
	CanRun    bool   // show the follow-up and cancel controls (the runner owns the session)
	// CompareURL, on the owner's page, picks a session to compare this
	// one with ("" elsewhere).
	CompareURL string
	// Where the follow-up and cancel forms post.
	MessagesURL, CancelURL string
	// Share is the owner's share panel (nil on a share link's page, or
	// when the server has no share store).
	Share *SharePanelView
	// Delete is the owner's delete button (nil when the server cannot
	// delete sessions).
	Delete *DeletePanelView
	// Transport is the replay's scrubber and controls (nil: none).
	Transport *TransportView
	// Signals are the page's Datastar signals (a JS object expression).
	Signals string
}

// DeletePanelView is the session page's delete button and its
// confirmation.
type DeletePanelView struct {
	URL string // where the confirmation form posts
	// Running is set while the server runs the session's turn: the panel
	// then says to cancel first, and offers no button.
	Running bool
	// Shares counts the session's share links that still work (they stop
	// working with it).
	Shares int
}

// DefaultWindow is how many transcript items the first paint shows.
const DefaultWindow = 120

// newSessionHeadFor builds the header of a timeline for a reader following
// l: a share link's header links no other session.
func newSessionHeadFor(t *Timeline, l Links) SessionHeadView {
	h := t.Header()
	st := t.Summary()
	v := SessionHeadView{
		ID:      clean(h.ID),
		Title:   clean(st.Title),
		Status:  clean(st.Status),
		Cwd:     clean(h.Cwd),
		Parent:  clean(h.ChildOf()),
		Summary: st,
		Pending: t.Pending(),
		LastSeq: t.LastSeq(),
		Live:    st.Status == core.StatusRunning,
		At:      -1,
		Of:      t.LastSeq(),

		ParentURL:     SessionURL(h.ChildOf()),
		ExportURL:     l.Events(),
		ExportHTMLURL: l.ExportHTML(),
		Shared:        l.Shared(),
		Snapshot:      l.scoped,
		LiveURL:       l.Page(),
	}
	r := NewR(t, l)
	v.Labels, v.LabelForm = labelViews("", SessionLabelsID, r)
	v.ShowLabels = r.Labels || len(v.Labels) > 0
	v.Attention = attentionViews("", r)
	v.ShowAttention = r.Labels || len(v.Attention) > 0
	v.LabelChoices = labelChoices(r)
	if !l.Shared() && !l.Offline() {
		for _, a := range t.reader.Ancestors {
			v.Path = append(v.Path, Link{Label: clean(a), URL: SessionURL(a)})
		}
	}
	if l.Shared() || l.Offline() {
		v.ParentURL = ""
	}
	if l.Shared() || t.reader.SharedNotes {
		// A share link's pages and its saved page never name the parent:
		// a child's link reveals nothing beyond the child.
		v.Parent = ""
	}
	if parent, turn, ok := forkOf(t); ok && !l.Shared() && !l.Offline() {
		v.ForkOf, v.ForkOfURL, v.ForkTurn = clean(parent), SessionURL(parent), turn
		v.CompareSourceURL = CompareURL(parent, h.ID)
	}
	if !l.Shared() && !l.Offline() && len(t.reader.Forks) > 0 {
		v.Forks, v.ForksURL = t.reader.Forks, ForksURL(h.ID)
	}
	v.Title = displayTitle(st.Title, h.ID)
	v.Cost, v.CostNote = SessionCost(&st, t.reader.Prices)
	v.Created = dateTime(h.CreatedAt)
	v.Updated = dateTime(st.LastTime)
	if st.LastTime > 0 && st.FirstTime > 0 {
		v.Duration = duration(st.LastTime - st.FirstTime)
	}
	return v
}

// SessionCost is a session's cost under price table p, from its summary's
// usage by model (the models that reported usage): "$0.0123", "≥ $0.01" when some model has no price, or
// "unknown" when none has; note names the models without a price. Both
// are "" without a table or usage. The session header and the list row
// show this one value.
func SessionCost(sum *core.Summary, p price.Table) (cost, note string) {
	var u Usage
	for _, m := range sum.Models {
		if m.TokenUsage != (core.TokenUsage{}) {
			u.add(m.Model, m.TokenUsage)
		}
	}
	if p == nil || len(u) == 0 {
		return "", ""
	}
	usd, complete := p.Sum(u)
	switch {
	case complete:
		return price.Format(usd), ""
	case usd > 0:
		return "≥ " + price.Format(usd), "no price for " + unpriced(u, p)
	}
	return "unknown", "no price for " + unpriced(u, p)
}

// dateTime formats epoch ms as "2006-01-02 15:04:05 UTC".
func dateTime(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 UTC")
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// displayTitle is a session's title as pages show it: its summary's title,
// else "Session" and the start of its id.
func displayTitle(title, id string) string {
	if title != "" {
		return clean(title)
	}
	return "Session " + clean(shortID(id))
}

// NewSessionPage builds the inspector page of t, showing the latest segments
// that fit in window items (at least one) and a loader for the rest. A live
// page streams what is appended after it (SessionStreamURL).
func NewSessionPage(meta PageMeta, t *Timeline, window int, live bool) *SessionPageView {
	return newSessionPageFor(meta, t, SessionLinks(t.Header().ID), window, live)
}

// newSessionPageFor builds the session page for a reader following l: the
// inspector, or a share link's replay page (same components, its links,
// no owner controls).
func newSessionPageFor(meta PageMeta, t *Timeline, l Links, window int, live bool) *SessionPageView {
	v, _ := newSessionPage(meta, t, l, window, live, LivePlace())
	return v
}

// NewReplayPageFor builds the session page of a replay for a reader
// following l: the fold at r.At (the live page when r.At < 0) with its
// transport, showing the window around the target p names (Call/Card or
// Event; p.At is ignored for r.At) marked as the current element, or else
// the latest window. A live page (r.At < 0 and live) streams what is
// appended after it; a page at an event opens no stream until the reader
// plays or goes live. It fails with core.CodeNotFound, naming it, when p
// names what the fold does not have.
func NewReplayPageFor(meta PageMeta, r *Replay, l Links, window int, live bool, p Place) (*SessionPageView, error) {
	p.At = r.At
	v, err := newSessionPage(meta, r.T, l, window, live && r.At < 0, p)
	if err != nil {
		return nil, err
	}
	v.Head.At, v.Head.Of, v.Head.Replay = r.At, r.Of, true
	focus := v.R.Current
	if focus == "" && r.At >= 0 {
		// A page at an event shows what that event did.
		if n, _ := r.T.nodeOfEvent(r.At); n != nil {
			focus = n.ElemID()
		}
	}
	v.Transport = newTransport(r, l, focus)
	v.Transport.Follow = live
	v.Signals = v.Transport.Signals()
	return v, nil
}

func newSessionPage(meta PageMeta, t *Timeline, l Links, window int, live bool, p Place) (*SessionPageView, error) {
	h := t.Header()
	r := NewR(t, l)
	segs := t.Segments()
	node, i, err := t.Target(p)
	if err != nil {
		return nil, err
	}
	start, end := windowStart(segs, window), len(segs)
	if node != nil && i >= 0 {
		start, end = WindowAround(segs, i, window)
		r.Current = node.ElemID()
	}
	v := &SessionPageView{Meta: meta, R: r, Head: newSessionHeadFor(t, l), Segments: segs[start:end]}
	if !l.Shared() {
		v.MessagesURL, v.CancelURL = MessagesURL(h.ID), CancelURL(h.ID)
	}
	if start > 0 {
		v.Earlier = newEarlier(r, segs, start, p.At)
	}
	if end < len(segs) {
		v.Later = newLater(r, segs, end-1, t.LastSeq(), p.At)
	}
	if live {
		v.StreamURL = l.Stream(t.LastSeq())
	}
	return v, nil
}

// windowStart returns the index of the first segment of the latest window:
// segments from the end whose items add up to at most window (at least one
// segment).
func windowStart(segs []Segment, window int) int {
	cost := 0
	for i := len(segs) - 1; i >= 0; i-- {
		c := segmentCost(segs[i])
		if cost+c > window && i < len(segs)-1 {
			return i + 1
		}
		cost += c
	}
	return 0
}

// newEarlier is the placeholder of segs[:end] on a page at at (< 0: live).
func newEarlier(r R, segs []Segment, end int, at int64) *EarlierView {
	before := segmentSeq(segs[end])
	return &EarlierView{
		Before:   before,
		Count:    end,
		URL:      r.links().Earlier(before),
		StartURL: r.links().At(Place{At: at, Event: segmentSeq(segs[0])}),
		R:        r,
	}
}

// newLater is the placeholder of the segments after segs[last] opened up
// to seq until, on a page at at (< 0: live).
func newLater(r R, segs []Segment, last int, until, at int64) *LaterView {
	after := segmentSeq(segs[last])
	n := 0
	for _, s := range segs[last+1:] {
		if segmentSeq(s) > until {
			break
		}
		n++
	}
	return &LaterView{
		After:  after,
		Until:  until,
		Count:  n,
		URL:    r.links().Later(after, until),
		EndURL: r.links().At(Place{At: at, Event: -1}),
		R:      r,
	}
}

// LoadEarlierAt returns the placeholder for before, filled with the window
// of segments that precede it (and a further placeholder when more remain),
// or nil when no segment starts at before, on a page that stands at event at
// (< 0: live) and links with l.
func LoadEarlierAt(t *Timeline, l Links, before int64, window int, at int64) *EarlierView {
	r := NewR(t, l)
	segs := t.Segments()
	end := segmentAt(segs, before)
	if end < 0 {
		return nil
	}
	e := newEarlier(r, segs, end, at)
	start := windowStart(segs[:end], window)
	e.Loaded = segs[start:end]
	if start > 0 {
		e.Next = newEarlier(r, segs, start, at)
	}
	return e
}

// LoadLater returns the placeholder for after, filled with the window of
// segments that follow it and were opened up to seq until (and a further
// placeholder when more remain), or nil when no segment starts at after.
// l are the reader's links, at is where the page stands (< 0: live).
func LoadLater(t *Timeline, l Links, after, until int64, window int, at int64) *LaterView {
	r := NewR(t, l)
	segs := t.Segments()
	last := segmentAt(segs, after)
	if last < 0 {
		return nil
	}
	v := newLater(r, segs, last, until, at)
	stop := last + 1 + v.Count
	start, end := last+1, last+1
	for used := 0; end < stop; end++ {
		c := segmentCost(segs[end])
		if used+c > window && end > start {
			break
		}
		used += c
	}
	v.Loaded = segs[start:end]
	if end < stop {
		v.Next = newLater(r, segs, end-1, until, at)
	}
	return v
}

// segmentAt returns the index of the segment opened by event seq, or -1.
func segmentAt(segs []Segment, seq int64) int {
	i, ok := slices.BinarySearchFunc(segs, seq, func(s Segment, seq int64) int {
		return cmp.Compare(segmentSeq(s), seq)
	})
	if !ok {
		return -1
	}
	return i
}

// segmentSeq returns the seq of the event that opened a segment.
func segmentSeq(s Segment) int64 {
	switch x := s.(type) {
	case *TurnRow:
		return x.Seq
	case *Step:
		return x.Seq
	case *row:
		return itemSeq(x.Item)
	}
	return -1
}

func itemSeq(it Item) int64 {
	switch x := it.(type) {
	case *messageItem:
		return x.Seq
	case *assistantItem:
		return x.Seq
	case *RawItem:
		return x.Event.Seq
	case *Card:
		if x.HasCall {
			return x.CallSeq
		}
		return x.ResultSeq
	}
	return -1
}

// SessionRowView is one row of the session list.
type SessionRowView struct {
	ID, Title, Status string
	Created, Updated  string
	UpdatedISO        string
	CreatedISO        string
	Calls, Errors     int64
	Events            int64
	// Awaiting counts the session's approvals waiting for a person.
	Awaiting int64
	Parent   string
	URL      string
	// Model names the session's models ("" when its log names none).
	Model string
	// Tokens is the input and output token count, compact ("12.3k /
	// 1.1k"); TokensTitle spells them out.
	Tokens, TokensTitle string
	// Priced: the list has a price table, and the row a cost column.
	// Cost and CostNote are SessionCost's (the session header's value).
	Priced         bool
	Cost, CostNote string
	// Forks counts the session's forks (its tree: ForksURL).
	Forks int
	// Kids counts the subagents listed (collapsed) under this row; Nested
	// marks a subagent's row listed under its parent's. Group is the
	// signal that shows a parent's nested rows. GroupChildren sets them.
	Kids   int
	Nested bool
	Group  string
	// Attention are the session's open attention firings (a badge).
	Attention []AttentionView
}

// GroupChildren orders rows so that each subagent (a row with a Parent)
// whose parent is among rows comes right after its parent, collapsed: the
// parent counts them (Kids) and they are Nested under its Group. A child
// whose parent is not among rows stays where it is ("child of …").
func GroupChildren(rows []*SessionRowView) []*SessionRowView {
	on := map[string]bool{}
	for _, r := range rows {
		on[r.ID] = true
	}
	kids := map[string][]*SessionRowView{}
	for _, r := range rows {
		if r.Parent != "" && r.Parent != r.ID && on[r.Parent] {
			kids[r.Parent] = append(kids[r.Parent], r)
		}
	}
	if len(kids) == 0 {
		return rows
	}
	out := make([]*SessionRowView, 0, len(rows))
	placed := map[string]bool{}
	var place func(r *SessionRowView, group string, depth int)
	place = func(r *SessionRowView, group string, depth int) {
		if placed[r.ID] || depth > 16 {
			return
		}
		placed[r.ID] = true
		c := *r
		c.Nested, c.Group, c.Kids = group != "", group, len(kids[r.ID])
		if c.Kids > 0 && group == "" {
			c.Group = "kids" + strconv.Itoa(len(out))
		}
		out = append(out, &c)
		for _, k := range kids[r.ID] {
			place(k, c.Group, depth+1)
		}
	}
	for _, r := range rows {
		if r.Parent != "" && r.Parent != r.ID && on[r.Parent] {
			continue // placed under its parent
		}
		place(r, "", 0)
	}
	for _, r := range rows { // a cycle of parents: list them flat
		if !placed[r.ID] {
			place(r, "", 0)
		}
	}
	return out
}

// NewSessionRow builds a session's list row from its stored summary: the
// same core.Summary values its page header shows, and with price table p
// (nil: none) the same cost.
func NewSessionRow(id, parentID string, createdAt, updatedAt int64, sum core.Summary, p price.Table) *SessionRowView {
	r := &SessionRowView{
		ID: id, Title: displayTitle(sum.Title, id), Status: sum.Status,
		Calls: sum.Calls, Errors: sum.Errors, Events: sum.Events, Awaiting: sum.Awaiting, Parent: parentID,
		URL: SessionURL(id), Model: sum.Model, Priced: p != nil,
		Tokens:      CompactCount(sum.InputTokens) + " / " + CompactCount(sum.OutputTokens),
		TokensTitle: Count(int(sum.InputTokens)) + " input tokens, " + Count(int(sum.OutputTokens)) + " output tokens",
	}
	r.Cost, r.CostNote = SessionCost(&sum, p)
	r.Updated, r.UpdatedISO = stamp(updatedAt)
	r.Created, r.CreatedISO = stamp(createdAt)
	return r
}

// stamp formats epoch ms for the list: "2006-01-02 15:04" UTC and RFC 3339.
func stamp(ms int64) (string, string) {
	if ms <= 0 {
		return "", ""
	}
	t := time.UnixMilli(ms).UTC()
	return t.Format("2006-01-02 15:04"), t.Format(time.RFC3339)
}

// ElemID returns the row's element id.
func (r *SessionRowView) ElemID() string { return SessionRowID(r.ID) }

// SessionRowID is the element id of session id's list row.
func SessionRowID(id string) string { return "session-" + CallElemID(id)[5:] }

// usageLine is the row's model, tokens and cost on one line, for phones
// (where their columns are hidden): "gpt-x · 12.3k / 1.1k tokens · $0.12".
func (r *SessionRowView) usageLine() string {
	parts := []string{r.Tokens + " tokens"}
	if r.Model != "" {
		parts = append([]string{r.Model}, parts...)
	}
	switch r.Cost {
	case "":
	case "unknown":
		parts = append(parts, "cost unknown")
	default:
		parts = append(parts, r.Cost)
	}
	return strings.Join(parts, " · ")
}

// cleaned returns a copy of the row whose text is safe in HTML and in SSE
// data lines (a CR in a session id or title would otherwise end the line
// and start a field of its own). Its element id is still the raw row's.
func (r *SessionRowView) cleaned() *SessionRowView {
	c := *r
	c.ID, c.Parent = clean(r.ID), clean(r.Parent)
	c.Title, c.Status = clean(r.Title), clean(r.Status)
	c.Model, c.CostNote = clean(r.Model), clean(r.CostNote)
	c.Created, c.Updated, c.UpdatedISO, c.CreatedISO = clean(r.Created), clean(r.Updated), clean(r.UpdatedISO), clean(r.CreatedISO)
	return &c
}

// SessionListView is the session list page.
type SessionListView struct {
	Meta      PageMeta
	Query     string
	Filter    ListFilter // the filters and order the rows were chosen by
	Rows      []*SessionRowView
	StreamURL string
	// AttentionCount counts the sessions with an open attention firing
	// (the attention filter's count); BoardURL, when set, links /board
	// (sessions run).
	AttentionCount int
	BoardURL       string
	CanRun         bool
	CanSearch      bool // the server has full-text search (/search)
	Priced         bool // a price table is configured: the list has a cost column
	Notice         string
	// Annotated is how many sessions have a label (the "annotated"
	// filter's count); nil when the server keeps no notes.
	Annotated *int
	// Demo links the scripted demo session the server started on an
	// empty database, while the list shows it (nil otherwise).
	Demo *Link
	// Watchable are agents' session folders found on this machine that
	// the server does not watch (the newcomer's hint).
	Watchable []WatchHint
}

// Filtered reports whether any filter narrows the list.
func (v *SessionListView) Filtered() bool {
	return v.Filter.Query != "" || v.Filter.Status != "" || v.Filter.HasErrors || v.Filter.Attention || v.Filter.Annotated
}

// AnnotatedLabel is the "annotated" filter's text, with its count.
func (v *SessionListView) AnnotatedLabel() string {
	if v.Annotated == nil {
		return "annotated"
	}
	return "annotated (" + strconv.Itoa(*v.Annotated) + ")"
}

// SortURL is the list with the same filters in order sort.
func (v *SessionListView) SortURL(sort string) string {
	f := v.Filter
	if sort == "updated" {
		sort = ""
	}
	f.Sort = sort
	return ListURL(f)
}

// SortedBy reports whether the list is in order sort.
func (v *SessionListView) SortedBy(sort string) bool {
	return v.Filter.Sort == sort || sort == "updated" && v.Filter.Sort == ""
}

// FilterSuffix says in words which other filters are on, for the empty
// list: " (status idle, with errors)", or "".
func (v *SessionListView) FilterSuffix() string {
	if s := v.filterSummary(); s != "" {
		return " (" + s + ")"
	}
	return ""
}

func (v *SessionListView) filterSummary() string {
	var parts []string
	if v.Filter.Status != "" {
		parts = append(parts, "status "+v.Filter.Status)
	}
	if v.Filter.HasErrors {
		parts = append(parts, "with errors")
	}
	if v.Filter.Attention {
		parts = append(parts, "needing attention")
	}
	if v.Filter.Annotated {
		parts = append(parts, "annotated")
	}
	return strings.Join(parts, ", ")
}

// Link is a labelled URL.
type Link struct{ Label, URL string }

// CallPageView shows one call's projections side by side.
type CallPageView struct {
	Meta       PageMeta
	SessionID  string
	SessionURL string
	Card       *CardView
	Name       string
	CallID     string
	RawArgs    Clip
	ParsedArgs Clip
	ArgsNote   string
	Content    Clip
	IsError    bool
	HasResult  bool
	MetaJSON   Clip
	ErrorJSON  string
	CallView   Clip
	ResultView Clip
	CallSeq    string
	ResultSeq  string
	CallTime   string
	ResultTime string
	Duration   string
	Others     []Link // the other cards with the same call id, on the session page
	// SaveTestURL downloads the call saved as a test (CallTestURL): set
	// for the owner's page of a completed call, never on a share link.
	SaveTestURL string
}

// Call page bounds: much larger than a card's.
const (
	callPageLines = 20000
	callPageRunes = 20000
)

// NewCallPage builds the projections page of card c.
func NewCallPage(meta PageMeta, t *Timeline, c *Card) *CallPageView {
	return NewCallPageFor(meta, t, SessionLinks(t.Header().ID), c)
}

// NewCallPageFor builds the projections page of card c for a reader
// following l.
func NewCallPageFor(meta PageMeta, t *Timeline, l Links, c *Card) *CallPageView {
	h := t.Header()
	vs := c.Views()
	// The result view's JSON and its clip (for a large read, a third of
	// the page's work) are built beside the rest of the page: they read
	// only the view, which the presenter has made.
	var resultView Clip
	var wg sync.WaitGroup
	var panicked any // re-raised on the request's goroutine, where the server recovers it
	if c.Result != nil {
		wg.Go(func() {
			defer func() { panicked = recover() }()
			if b, err := viewJSON(vs.result); err == nil {
				resultView = validJSONClip(string(b), callPageLines, callPageRunes)
			}
		})
	}
	v := &CallPageView{
		Meta:       meta,
		SessionID:  clean(h.ID),
		SessionURL: l.CardPlace(t, c),
		Card:       NewCardViewIn(c, NewR(t, l)),
		Name:       clean(c.Name),
		CallID:     clean(c.CallID),
		HasResult:  c.Result != nil,
	}
	if c.HasCall {
		v.RawArgs = newClipN(c.Args, callPageLines, callPageRunes)
		v.CallSeq = strconv.FormatInt(c.CallSeq, 10)
		_, v.CallTime = clock(c.CallTime)
		parsed := core.ParseArguments(c.Args)
		if s, ok := parsed.(string); ok && s == c.Args && c.Args != "" {
			v.ArgsNote = "not JSON: the raw string is kept as is"
		} else if b, err := core.MarshalNoEscape(parsed); err == nil {
			v.ParsedArgs = prettyJSONClip(string(b), callPageLines, callPageRunes)
		}
		if vs.call != nil {
			if b, err := viewJSON(vs.call); err == nil {
				v.CallView = validJSONClip(string(b), callPageLines, callPageRunes)
			}
		} else {
			v.CallView = newClip("(no valid call view: the generic card is shown)", 1)
		}
	}
	if c.Result != nil {
		res := c.Result.Projection()
		v.IsError = res.IsError
		v.Content = newClipN(res.Content.PlainText(), callPageLines, callPageRunes)
		if len(c.Result.Meta) > 0 {
			if c.metaValid {
				v.MetaJSON = validJSONClip(string(c.Result.Meta), callPageLines, callPageRunes)
			} else {
				v.MetaJSON = prettyJSONClip(string(c.Result.Meta), callPageLines, callPageRunes)
			}
		}
		if c.Result.Error != nil {
			v.ErrorJSON = clean(c.Result.Error.Name + " / " + c.Result.Error.Code)
		}
		v.ResultSeq = strconv.FormatInt(c.ResultSeq, 10)
		_, v.ResultTime = clock(c.ResultTime)
		if c.HasCall {
			v.Duration = duration(c.ResultTime - c.CallTime)
		}
		if !l.Shared() && !l.Offline() {
			card := ""
			if cards := t.CardsByCallID(c.CallID); len(cards) > 1 {
				card = c.ID
			}
			v.SaveTestURL = CallTestURL(h.ID, c.CallID, card)
		}
	}
	for _, o := range t.CardsByCallID(c.CallID) {
		if o != c {
			v.Others = append(v.Others, Link{Label: o.ID, URL: l.CardPlace(t, o)})
		}
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	v.ResultView = resultView
	return v
}

// viewJSON encodes a card view for the projections page. A view that
// writes its own JSON is asked directly — encoding/json would copy its
// output and check it again, which for a 20,000-line view is much of the
// page's work. Views are core's own types (the view interfaces are
// sealed), whose writers produce encoding/json's bytes (core's tests hold
// them to it), so the result is valid JSON and is not checked again.
func viewJSON(v any) ([]byte, error) {
	m, ok := v.(json.Marshaler)
	if rv := reflect.ValueOf(v); !ok || rv.Kind() == reflect.Pointer && rv.IsNil() {
		return core.MarshalNoEscape(v)
	}
	return m.MarshalJSON()
}

// exprURL makes a URL safe inside a Datastar expression string literal: any
// byte outside a conservative set is percent-encoded.
func exprURL(u string) string {
	var b strings.Builder
	const hexdigits = "0123456789ABCDEF"
	for i := 0; i < len(u); i++ {
		c := u[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/-_.~%?=&", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	return b.String()
}

// ariaSort is a column header's aria-sort: "descending" for the column the
// list is ordered by (largest first), else "none".
func ariaSort(sorted bool) string {
	if sorted {
		return "descending"
	}
	return "none"
}

// snapshotTail ends a scoped share link's note after its last event.
func snapshotTail(running bool) string {
	if running {
		return " of a running session; later events are not shared."
	}
	return "; later events are not shared."
}
