package views

import (
	"strconv"
	"strings"

	"github.com/a-h/templ"
)

// TransportView is a session page's replay transport: the scrubber with
// its turn ticks and chapter marks, the step, play and live controls, and
// where the page stands. Every control is a link to the page it leads to
// (so it works without script and opens in a new tab); the page's script
// turns a click into a request on the page's stream (SeekURL, StepURL,
// PlayURL, SessionStreamURL) answered with patches.
type TransportView struct {
	SessionID string
	At, Of    int64 // At < 0: live (at Of and following)
	Running   bool  // the session is running: live follows it
	Follow    bool  // the page may follow the session live on its stream
	Current   string

	Ticks []ScrubMark // turn starts
	Lanes []Lane      // chapter marks by kind, bucketed (see scrubBuckets)

	// Page links of the controls ("" when there is nothing that way).
	Start, PrevMark, PrevCall, PrevEvent string
	NextEvent, NextCall, NextMark, Live  string

	// Endpoints the page's script requests.
	SeekBase, StreamBase string

	// ForkURL is where the transport's "fork here" posts ("" on pages
	// that offer no fork); TurnEnds are the seqs of the turn/end events,
	// where it is shown (a JSON array for the page's expression).
	ForkURL, TurnEnds string
}

// Lane is one kind of chapter mark on the scrubber: errors on top,
// interruptions in the middle, edits below.
type Lane struct {
	Kind  string
	Y     string // the lane's offset in the drawing
	Marks []ScrubMark
}

// ScrubMark is one tick or mark of the scrubber: at seq X, of a kind,
// standing for Count marks of that kind close together (the first of
// them is the one it links to). URL is relative (a query): the page's own
// path at that place, the owner's or a share link's alike.
type ScrubMark struct {
	X     int64
	Kind  string
	Count int
	Card  string
	URL   string
	Title string
}

// scrubBuckets is how many positions the scrubber distinguishes: marks of
// one kind closer than 1/scrubBuckets of the session are drawn as one
// (a 1,180 px bar has ~4 px per bucket), which bounds the markup of a
// session with thousands of marks.
const scrubBuckets = 200

// Speeds are the playback speeds the transport offers.
var speeds = [...]int{1, 10, 50}

// Speeds returns the playback speeds the transport offers (1×, 10×, 50×).
func Speeds() []int { return speeds[:] }

// newTransport builds the transport of a replay for a reader following l;
// current is the element the page marks as current ("" for none).
func newTransport(r *Replay, l Links, current string) *TransportView {
	v := &TransportView{
		SessionID:  r.T.Header().ID,
		At:         r.At,
		Of:         r.Of,
		Running:    r.Running,
		Current:    current,
		Live:       l.Page(),
		SeekBase:   l.SeekBase(),
		StreamBase: l.StreamBase(),
	}
	v.ForkURL, v.TurnEnds = transportForkOf(r.T, l)
	ch := &r.Chapters
	at := r.At
	page := func(seq int64, card string) string {
		if seq < 0 || seq > r.Of {
			return ""
		}
		return l.At(Place{At: seq, Card: card, Event: -1})
	}
	here := func(seq int64, card string) string { return Place{At: seq, Card: card, Event: -1}.Query() }
	if r.Of >= 0 && at != 0 {
		v.Start = page(0, "")
	}
	step := func(kind string, dir int) string {
		seq, m, ok := ch.Step(at, kind, dir)
		if !ok {
			return ""
		}
		if m != nil {
			return page(seq, m.Card)
		}
		return page(seq, "")
	}
	v.PrevMark, v.PrevCall, v.PrevEvent = step(StepMark, -1), step(StepCall, -1), step(StepEvent, -1)
	if at >= 0 {
		v.NextEvent, v.NextCall, v.NextMark = step(StepEvent, 1), step(StepCall, 1), step(StepMark, 1)
	}
	span := r.Of + 1
	bucket := func(seq int64) int64 {
		if span <= scrubBuckets {
			return seq
		}
		return seq * scrubBuckets / span
	}
	// The last mark of each kind, by index, and its bucket.
	type lastMark struct {
		i int
		b int64
	}
	last := map[string]lastMark{}
	add := func(list *[]ScrubMark, seq int64, kind, card, tool string) {
		b := bucket(seq)
		if l, ok := last[kind]; ok && l.b == b {
			(*list)[l.i].Count++
			return
		}
		*list = append(*list, ScrubMark{X: seq, Kind: kind, Count: 1, Card: card, URL: here(seq, card), Title: tool})
		last[kind] = lastMark{len(*list) - 1, b}
	}
	for _, seq := range ch.Turns {
		add(&v.Ticks, seq, "turn", "", "")
	}
	v.Lanes = []Lane{{Kind: markError, Y: "1"}, {Kind: markInterrupted, Y: "8"}, {Kind: markEdit, Y: "15"}}
	for _, m := range ch.Marks {
		for i := range v.Lanes {
			if v.Lanes[i].Kind == m.Kind {
				add(&v.Lanes[i].Marks, m.Seq, m.Kind, m.Card, m.Tool)
			}
		}
	}
	for _, ln := range v.Lanes {
		for i := range ln.Marks {
			ln.Marks[i].Title = markTitle(&ln.Marks[i])
		}
	}
	return v
}

func markTitle(m *ScrubMark) string {
	var b strings.Builder
	switch {
	case m.Count > 1:
		b.WriteString(plural(m.Count, m.Kind, m.Kind+"s"))
		b.WriteString(" from ")
	default:
		b.WriteString(m.Kind)
		if m.Title != "" && m.Title != m.Kind {
			b.WriteString(" · ")
			b.WriteString(clean(firstLine(m.Title, 60)))
		}
		b.WriteString(" at ")
	}
	b.WriteString(strconv.FormatInt(m.X, 10))
	return b.String()
}

// Mode is where the page stands: "live" or "at" (a replay paused at an
// event). Playing is the page script's state ("play").
func (v *TransportView) Mode() string {
	if v.At < 0 {
		return "live"
	}
	return "at"
}

// Pos is the position the scrubber shows: At, or the end when live.
func (v *TransportView) Pos() int64 {
	if v.At < 0 {
		return v.Of
	}
	return v.At
}

// Signals are the page's Datastar signals: ttAt, the seq the page holds
// when it stands at an event (-1 live), and ttMode.
func (v *TransportView) Signals() string {
	return "{ttAt: " + strconv.FormatInt(v.At, 10) + ", ttMode: '" + v.Mode() + "'}"
}

// ViewBox is the scrubber drawing's coordinates: one unit per event.
func (v *TransportView) ViewBox() string {
	w := v.Of + 1
	if w < 1 {
		w = 1
	}
	return "0 0 " + strconv.FormatInt(w, 10) + " 24"
}

// itoa64 formats an int64.
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// markX is a mark's x: the middle of its event's unit.
func markX(x int64) string { return strconv.FormatInt(x, 10) + ".5" }

// streamInit is the Datastar expression that opens a page's stream on the
// #stream element. Every request of the transport is made from that
// element, so a new one (seek, play, pause, live) cancels the one before,
// and removing the expression cancels it too.
func streamInit(url string) string {
	return "@get('" + exprURL(url) + "', {requestCancellation: 'cleanup'})"
}

// currentAttr marks the page's current element.
func currentAttr(on bool) templ.Attributes {
	if on {
		return templ.Attributes{"aria-current": "true"}
	}
	return nil
}

// iconPaths are the transport's glyphs (16×16).
var iconPaths = map[string]string{
	"start":      "M1 3h2v10H1zM9 3v10L4 8zM15 3v10L10 8z",
	"prev-mark":  "M6 3v10L1 8zM12 4l4 4-4 4-4-4z",
	"prev-call":  "M8 3v10L2 8zM14 3v10L8 8z",
	"prev-event": "M3 3h2v10H3zM13 3v10L6 8z",
	"play":       "M4 2v12l10-6z",
	"pause":      "M3 2h4v12H3zM9 2h4v12H9z",
	"next-event": "M11 3h2v10h-2zM3 3v10l7-5z",
	"next-call":  "M2 3v10l6-5zM8 3v10l6-5z",
	"next-mark":  "M4 4l4 4-4 4-4-4zM10 3v10l5-5z",
	"rewind":     "M8 3v10L2 8zM14 3v10L8 8z",
}

func iconPath(name string) string { return iconPaths[name] }
