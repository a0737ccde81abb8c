package views

import (
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"prism/core"
	"prism/core/notes"
	"prism/core/price"
)

// Presenter computes the views of tool cards from durable data. It must be
// pure and never fail; *core.Registry implements it.
type Presenter interface {
	// PresentCall returns the pending card's view of a logged call.
	PresentCall(name, rawArgs string) core.CallView
	// PresentResult returns the completed card's view of a call's result.
	PresentResult(name, rawArgs string, res core.ToolResult) core.ResultView
}

// transcriptID is the element id of the flat transcript container that
// turn rows, steps and loose rows are appended to.
const transcriptID = "transcript"

// Timeline is the incremental fold of a session log into the page model: the
// single place where events become turns, steps, messages and tool cards.
// The full page, the SSE patches and the replay page all render from a
// Timeline, which is why a live card equals its replayed twin byte for byte.
//
// Apply events in seq order. A Timeline is not safe for concurrent use.
type Timeline struct {
	header core.SessionHeader
	p      Presenter

	segs      []Segment
	cards     []*Card            // every card, in log order
	calls     map[string][]*Card // by call id, in log order
	idCount   map[string]int     // call id → cards so far (the nth gets cardElemID(id, n))
	byElem    map[string]*Card
	approvals map[string]*Card // approval id → card
	// requested are the tool calls the open turn's assistant messages
	// asked for, by call id: a result whose call was never logged (crash
	// repair's "not started") takes its name and arguments from here.
	requested map[string]*core.ToolCallBlock

	turn   *TurnRow
	step   *Step
	stream *assistantItem // the assistant message being streamed, if any

	lastSeq int64
	sum     core.Summary // title, status, counters: core's rules

	reader Reader // what pages rendered from the fold show (SetReader)
}

// Reader is what the pages of a fold may show and do for the one who
// reads them. One value carries it all, so that a page built on any path
// (live, at an event, a playback, an earlier window) shows the same.
type Reader struct {
	// ReadOnly renders awaiting cards without their decision forms: a
	// session the server does not run, a share link, a page at an event.
	ReadOnly bool
	// Prices, when set, adds costs to the token lines of steps and turns
	// and to the session header: the owner's pages only.
	Prices price.Table
	// Notes are the session's notes as the reader may see them, removed
	// ones included: a card shows the labels that apply at the seq its
	// page shows (notes.Note.AppliesAt). The owner's pages, or a share
	// link's when SharedNotes is set.
	Notes []notes.Note
	// SharedNotes says Notes were chosen (and redacted) for a share link:
	// a share's pages and its saved page show them. Without it, a page
	// rendered with a link's or a saved file's URLs shows no note.
	SharedNotes bool
	// Labels offers the cards' label form (add, edit, remove): the owner's
	// live pages on a server that keeps notes.
	Labels bool
	// LabelChoices are the labels the form suggests (nil: DefaultLabels).
	LabelChoices []string
	// Fork offers "fork here" at each ended turn (and on the transport at
	// a turn's end): the owner's pages on a server whose runner forks.
	Fork bool
	// Forks are the session's forks, which its header names (the
	// owner's pages only).
	Forks []ForkLink
	// Children are the logs of the children the Notes' link notes name,
	// by id (a linked child missing here is shown as not found); nil nests
	// no children. The owner's pages, and a share link's made with its
	// children (their logs redacted as the link's).
	Children map[string]*ChildLog
	// Ancestors are a subagent's parent, its parent's parent and so on,
	// root first (the session page's path). The owner's pages only.
	Ancestors []string
	// ChildrenUntil, when set, is the time of the parent's event the page
	// shows: a nested child shows only its events up to it.
	ChildrenUntil int64
	// ScopedChildren (a share link scoped at an event) has nested children
	// show what they had by the last event the reader may see, as at an
	// event of time travel; the replay sets ChildrenUntil from it.
	ScopedChildren bool
	// Highlights memoizes the code cards' syntax highlighting across
	// renders (the server's one cache); nil highlights every render
	// afresh, to the same tokens.
	Highlights *HighlightCache
}

// NewTimeline returns an empty fold of the session h whose cards are
// presented by p.
func NewTimeline(h core.SessionHeader, p Presenter) *Timeline {
	return &Timeline{
		header:    h,
		p:         p,
		calls:     map[string][]*Card{},
		idCount:   map[string]int{},
		byElem:    map[string]*Card{},
		approvals: map[string]*Card{},
		lastSeq:   -1,
		sum:       core.NewSummary(),
	}
}

// Fold returns the Timeline of a whole log.
func Fold(h core.SessionHeader, events []core.Event, p Presenter) *Timeline {
	t := NewTimeline(h, p)
	t.ApplyAll(events)
	return t
}

// ApplyAll applies a batch of events in seq order. It ends in the state
// Apply would reach event by event, but looks ahead: the chunks of a
// streamed message that a later assistant/message in the batch finalizes
// are not decoded (the final message replaces their text); and a large
// batch is decoded in parallel (decoding is most of a fold's work) before
// it is applied in order.
func (t *Timeline) ApplyAll(events []core.Event) {
	superseded := supersededChunks(events)
	pre := predecode(events, superseded, t.lastSeq)
	for i := range events {
		e := &events[i]
		if e.Seq <= t.lastSeq {
			continue
		}
		if superseded[i] && t.stream != nil {
			t.skip(e)
			continue
		}
		dec := decoded{}
		if pre != nil && !superseded[i] {
			dec = pre[i]
		} else {
			dec = decodeEvent(e)
		}
		t.apply(e, dec)
	}
}

// supersededChunks marks the chunks of a batch that a later message of
// the batch finalizes.
func supersededChunks(events []core.Event) []bool {
	superseded := make([]bool, len(events))
	for i := 0; i < len(events); {
		if events[i].Type != core.EventAssistantChunk {
			i++
			continue
		}
		j := i
		for j < len(events) && events[j].Type == core.EventAssistantChunk {
			j++
		}
		if j < len(events) && events[j].Type == core.EventAssistantMessage && !(events[j].SurfaceOp != nil && events[j].SurfaceOp.Replace) {
			for k := i; k < j; k++ {
				superseded[k] = true
			}
		}
		i = j
	}
	return superseded
}

// parallelDecodeMin is the batch size from which ApplyAll decodes in
// parallel: below it, starting goroutines costs more than it saves.
const parallelDecodeMin = 512

// predecode decodes the events a fold will decode — those after lastSeq
// that are not superseded chunks — on GOMAXPROCS goroutines, each taking a
// contiguous share of the bytes. It returns nil for a small batch or a
// single processor (the fold then decodes as it goes).
func predecode(events []core.Event, superseded []bool, lastSeq int64) []decoded {
	workers := runtime.GOMAXPROCS(0)
	if len(events) < parallelDecodeMin || workers < 2 {
		return nil
	}
	total := 0
	for i := range events {
		total += len(events[i].Data)
	}
	pre := make([]decoded, len(events))
	var wg sync.WaitGroup
	share := total/workers + 1
	for start := 0; start < len(events); {
		end, size := start, 0
		for end < len(events) && (size < share || end == start) {
			size += len(events[end].Data)
			end++
		}
		from, to := start, end
		wg.Go(func() {
			for i := from; i < to; i++ {
				if !superseded[i] && events[i].Seq > lastSeq {
					pre[i] = decodeEvent(&events[i])
				}
			}
		})
		start = end
	}
	wg.Wait()
	return pre
}

// Decode decodes a log's events as a fold of the whole log does (in
// parallel when it is large, the chunks a later message finalizes
// skipped) and discards the values: the fold's input cost, which a page's
// benchmarks measure beside the page. It returns how many events did not
// decode.
func Decode(events []core.Event) int {
	superseded := supersededChunks(events)
	pre := predecode(events, superseded, -1)
	bad := 0
	for i := range events {
		if superseded[i] {
			continue
		}
		d := decoded{}
		if pre != nil {
			d = pre[i]
		} else {
			d = decodeEvent(&events[i])
		}
		if d.err != nil {
			bad++
		}
	}
	return bad
}

// skip records an event without decoding it for the transcript.
func (t *Timeline) skip(e *core.Event) {
	t.lastSeq = e.Seq
	t.sum.Apply(e)
}

// CallContextTypes are the event types that, with one call's own events
// (the events core.FactsOf gives its call id), fold to that call's cards
// exactly as the whole log does: the turn and step boundaries that stop an
// unanswered call and pair a reused call id's result with the right card,
// and the approval decisions (which name an approval, not a call).
// The exception is a card whose call was never logged (crash repair's "not
// started"): the whole log's fold takes its tool and arguments from the
// turn's assistant request, which the context lacks, so its card from the
// context has neither HasCall nor Requested and a caller that wants them
// folds the whole log.
func CallContextTypes() []string {
	return []string{core.EventTurnStart, core.EventTurnEnd, core.EventStepStart, core.EventStepEnd, core.EventApprovalDecided}
}

// CallContext returns the events of a log that place one call's cards (in
// log order): the call's own events and those of CallContextTypes. A store
// selects the same events by its call-id column; this is that selection
// over a log in memory.
func CallContext(events []core.Event, callID string) []core.Event {
	types := CallContextTypes()
	var out []core.Event
	for i := range events {
		e := &events[i]
		if slices.Contains(types, e.Type) {
			out = append(out, *e)
		} else if f := core.FactsOf(e); f.CallID() == callID {
			out = append(out, *e)
		}
	}
	return out
}

// Header returns the session header.
func (t *Timeline) Header() core.SessionHeader { return t.header }

// SetReader says what pages rendered from the timeline show their reader.
func (t *Timeline) SetReader(rd Reader) { t.reader = rd }

// Reader returns what the timeline's pages show their reader.
func (t *Timeline) Reader() Reader { return t.reader }

// SetReadOnly says whether pages rendered from the timeline may decide its
// approvals: a session the server does not run is read-only (its awaiting
// cards show that they wait, without Approve and Reject).
func (t *Timeline) SetReadOnly(ro bool) { t.reader.ReadOnly = ro }

// LastSeq returns the seq of the last applied event, or -1.
func (t *Timeline) LastSeq() int64 { return t.lastSeq }

// Segments returns the flat transcript: turn rows, steps and loose rows in
// log order. The slice is owned by the Timeline.
func (t *Timeline) Segments() []Segment { return t.segs }

// Title returns the session's title by core.Summary's rule, or "".
func (t *Timeline) Title() string { return t.sum.Title }

// Summary returns the session's derived state: core.Summary of the events
// applied so far, the same values the session list shows.
func (t *Timeline) Summary() core.Summary { return t.sum }

// Pending returns how many cards wait for their result (neither answered
// nor stopped by the end of their step or turn).
func (t *Timeline) Pending() int {
	n := 0
	for _, cs := range t.calls {
		for _, c := range cs {
			if c.Result == nil && !c.Stopped {
				n++
			}
		}
	}
	return n
}

// Card returns the card with the given element id, or nil.
func (t *Timeline) Card(elemID string) *Card { return t.byElem[elemID] }

// CardsByCallID returns the cards of one call id, in log order (a model that
// reuses call ids yields several).
func (t *Timeline) CardsByCallID(callID string) []*Card { return t.calls[callID] }

// Apply folds one event into the timeline and returns what changed on the
// page. Events must come in seq order; an event at or below LastSeq is
// ignored (empty Update).
func (t *Timeline) Apply(e *core.Event) Update {
	if e.Seq <= t.lastSeq {
		return Update{}
	}
	return t.apply(e, decodeEvent(e))
}

// decoded is an event's data decoded into the type the fold reads of it
// (v nil for a type the fold does not decode), or the decode's error.
type decoded struct {
	v   any
	err error
}

// decodeEvent decodes e's data for the fold: a pure function of e, so a
// batch is decoded in parallel (ApplyAll) before it is applied in order.
func decodeEvent(e *core.Event) decoded {
	var v any
	switch e.Type {
	case core.EventTurnStart:
		v = new(core.TurnStart)
	case core.EventTurnEnd:
		v = new(core.TurnEnd)
	case core.EventStepStart:
		v = new(core.StepBoundary)
	case core.EventUserMessage:
		v = new(core.Message)
	case core.EventAssistantChunk:
		v = new(core.AssistantChunk)
	case core.EventAssistantMessage:
		v = new(core.AssistantMessage)
	case core.EventToolCall:
		v = new(core.ToolCall)
	case core.EventToolResult:
		d := new(core.ToolResultData)
		return decoded{v: d, err: core.DecodeToolResultData(e.Data, d)}
	case core.EventSessionTitle:
		v = new(core.SessionTitle)
	case core.EventApprovalAsked:
		v = new(core.ApprovalAsked)
	case core.EventApprovalDecided:
		v = new(core.ApprovalDecided)
	default:
		return decoded{}
	}
	return decoded{v: v, err: json.Unmarshal(e.Data, v)}
}

// apply folds e, whose data dec holds decoded (decodeEvent).
func (t *Timeline) apply(e *core.Event, dec decoded) Update {
	t.lastSeq = e.Seq
	u := Update{From: e.Seq, Seq: e.Seq}
	// The summary reads the data the switch decodes (core.TypedFacts);
	// events the switch does not decode, or cannot, it reads itself.
	var typed any
	defer func() {
		if typed != nil {
			f := core.TypedFacts(e, typed)
			t.sum.ApplyFacts(e, &f)
		} else {
			t.sum.Apply(e)
		}
	}()
	if e.Type != core.EventAssistantChunk {
		t.stream = nil
	}
	switch e.Type {
	case core.EventTurnStart:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.TurnStart)
		t.closeTurn(&u, e, nil)
		t.requested = nil
		r := &TurnRow{Seq: e.Seq, Time: e.Time, Turn: d.Turn}
		t.turn, t.step = r, nil
		t.segs = append(t.segs, r)
		u.append(transcriptID, r)
		u.Header = true
	case core.EventTurnEnd:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.TurnEnd)
		typed = d
		if t.turn == nil {
			t.addRaw(&u, e, "meta", "turn/end without an open turn")
			break
		}
		t.closeTurn(&u, e, &d.Reason)
		u.Header = true
	case core.EventStepStart:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.StepBoundary)
		t.closeStep(&u, e)
		s := &Step{Seq: e.Seq, Time: e.Time, Turn: t.turn, TurnNo: d.Turn, StepNo: d.Step}
		t.step = s
		t.segs = append(t.segs, s)
		u.append(transcriptID, s)
	case core.EventStepEnd:
		if t.step == nil {
			t.addRaw(&u, e, "meta", "step/end without an open step")
			break
		}
		t.closeStep(&u, e)
		u.Header = true
	case core.EventUserMessage:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		m := dec.v.(*core.Message)
		typed = m
		if e.SurfaceOp != nil && e.SurfaceOp.Replace {
			t.addRaw(&u, e, "replacement", "")
			break
		}
		t.addItem(&u, &messageItem{Seq: e.Seq, Time: e.Time, Message: *m})
	case core.EventAssistantChunk:
		if dec.err != nil {
			t.stream = nil
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.AssistantChunk)
		t.applyChunk(&u, e, &d.Chunk)
	case core.EventAssistantMessage:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.AssistantMessage)
		typed = d
		if e.SurfaceOp != nil && e.SurfaceOp.Replace {
			t.addRaw(&u, e, "replacement", "")
			break
		}
		t.applyAssistant(&u, e, d)
	case core.EventToolCall:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.ToolCall)
		typed = d
		c := t.newCard(d.CallID)
		c.Name, c.Args, c.HasCall = d.Name, d.Arguments, true
		c.CallSeq, c.CallTime = e.Seq, e.Time
		t.addItem(&u, c)
		u.Header = true
	case core.EventToolResult:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.ToolResultData)
		typed = d
		if e.SurfaceOp != nil && e.SurfaceOp.Replace {
			// A replacement rewrites the model's copy only; the card keeps
			// what the user saw.
			break
		}
		t.applyResult(&u, e, d)
		u.Header = true
	case core.EventSessionTitle:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		typed = dec.v.(*core.SessionTitle)
		t.addRaw(&u, e, "meta", "")
		u.Header = true
	case core.EventApprovalAsked:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.ApprovalAsked)
		typed = d
		c := t.openCard(d.CallID)
		if c == nil || d.ID == "" {
			t.addRaw(&u, e, "meta", "")
			break
		}
		c.Approval = &CardApproval{ID: d.ID, Reason: d.Reason, Seq: e.Seq, Time: e.Time}
		t.approvals[d.ID] = c
		u.morph(c)
		u.Header = true
	case core.EventApprovalDecided:
		if dec.err != nil {
			t.addRaw(&u, e, "malformed", dec.err.Error())
			break
		}
		d := dec.v.(*core.ApprovalDecided)
		typed = d
		c := t.approvals[d.ID]
		if c == nil || c.Approval == nil || c.Approval.ID != d.ID || c.Approval.Decided {
			t.addRaw(&u, e, "meta", "")
			break
		}
		a := c.Approval
		a.Decided, a.Outcome, a.By, a.Note, a.Why, a.DecidedTime = true, d.Outcome, d.By, d.Note, d.Reason, e.Time
		u.morph(c)
		u.Header = true
	default:
		kind := "meta"
		if !core.IsKnownEventType(e.Type) {
			kind = "unknown"
		}
		t.addRaw(&u, e, kind, "")
	}
	return u
}

func (t *Timeline) addRaw(u *Update, e *core.Event, kind, note string) {
	t.addItem(u, &RawItem{Event: *e, Kind: kind, Note: note})
}

// stepMetaTypes are the events shown in a step's metadata row.
var stepMetaTypes = map[string]bool{core.EventRequestHeader: true, core.EventRequestContext: true, core.EventInboxSpliced: true}

// addItem appends it to the open step (a request metadata event to the
// step's metadata row), or as a loose row.
func (t *Timeline) addItem(u *Update, it Item) {
	if raw, ok := it.(*RawItem); ok && t.step != nil && !t.step.Ended && raw.Kind == "meta" && stepMetaTypes[raw.Event.Type] {
		t.step.Meta = append(t.step.Meta, raw)
		u.morph(stepHead{t.step})
		return
	}
	if t.step != nil && !t.step.Ended {
		t.step.Items = append(t.step.Items, it)
		u.append(t.step.ItemsID(), it)
		return
	}
	r := &row{Item: it}
	t.segs = append(t.segs, r)
	u.append(transcriptID, r)
}

func (t *Timeline) applyChunk(u *Update, e *core.Event, ch *core.StreamChunk) {
	idx := 0
	if ch.Index != nil {
		idx = *ch.Index
	}
	switch ch.Type {
	case core.ChunkBlockStart, core.ChunkTextDelta, core.ChunkReasoningDelta, core.ChunkBlockEnd:
	default:
		return // tool-call deltas, usage, finish: nothing visible
	}
	if ch.Type == core.ChunkBlockStart && ch.BlockType != core.BlockText && ch.BlockType != core.BlockReasoning {
		return
	}
	a := t.stream
	created := false
	if a == nil {
		a = &assistantItem{Seq: e.Seq, Time: e.Time, byIndex: map[int]int{}}
		t.stream = a
		created = true
	}
	a.EndSeq = e.Seq
	block := func(kind string) *assistantBlock {
		i, ok := a.byIndex[idx]
		if !ok {
			a.Blocks = append(a.Blocks, assistantBlock{Kind: kind})
			i = len(a.Blocks) - 1
			a.byIndex[idx] = i
		}
		return &a.Blocks[i]
	}
	switch ch.Type {
	case core.ChunkBlockStart:
		kind := "text"
		if ch.BlockType == core.BlockReasoning {
			kind = "reasoning"
		}
		block(kind)
	case core.ChunkTextDelta:
		if ch.Text != nil {
			b := block("text")
			b.Text += *ch.Text
		}
	case core.ChunkReasoningDelta:
		if ch.Text != nil {
			b := block("reasoning")
			b.Text += *ch.Text
		}
	case core.ChunkBlockEnd:
		if len(ch.Block) == 0 {
			return
		}
		blk, err := core.DecodeBlock(ch.Block)
		if err != nil {
			return
		}
		switch x := blk.(type) {
		case *core.TextBlock:
			b := block("text")
			b.Text = x.Text
		case *core.ReasoningBlock:
			b := block("reasoning")
			b.Text = x.Text
		default:
			return // tool-call blocks become cards at tool/call
		}
	}
	if created {
		t.addItem(u, a)
		return
	}
	u.morph(a)
}

func (t *Timeline) applyAssistant(u *Update, e *core.Event, d *core.AssistantMessage) {
	a := t.streamOf(e)
	created := a == nil
	if created {
		a = &assistantItem{Seq: e.Seq, Time: e.Time}
	}
	a.EndSeq = e.Seq
	a.Blocks = a.Blocks[:0]
	a.byIndex = nil
	a.ToolCalls = 0
	for _, b := range d.Message.Content {
		switch x := b.(type) {
		case *core.TextBlock:
			a.Blocks = append(a.Blocks, assistantBlock{Kind: "text", Text: x.Text})
		case *core.ReasoningBlock:
			a.Blocks = append(a.Blocks, assistantBlock{Kind: "reasoning", Text: x.Text})
		case *core.ToolCallBlock:
			a.ToolCalls++
			if t.requested == nil {
				t.requested = map[string]*core.ToolCallBlock{}
			}
			t.requested[x.ID] = x
		default:
			raw, _ := json.Marshal(b)
			a.Blocks = append(a.Blocks, assistantBlock{Kind: "other", Text: string(raw)})
		}
	}
	a.Final = true
	a.Interrupted = d.Interrupted
	a.Usage = d.Usage
	a.Model = d.Message.Source.Model
	if d.Usage != nil {
		model := d.Message.Source.Model
		if t.step != nil {
			t.step.Usage = t.step.Usage.Add(*d.Usage)
			t.step.HasUsage = true
			t.step.ByModel.add(model, *d.Usage)
		}
		if t.turn != nil {
			t.turn.Usage.add(model, *d.Usage)
		}
	}
	if created {
		t.addItem(u, a)
		return
	}
	u.morph(a)
}

// streamOf finds the streamed item an assistant/message finalizes: the
// latest unfinished assistant item of the open step (or loose rows).
func (t *Timeline) streamOf(e *core.Event) *assistantItem {
	if t.step != nil {
		for i := len(t.step.Items) - 1; i >= 0; i-- {
			if a, ok := t.step.Items[i].(*assistantItem); ok {
				if a.Final {
					return nil
				}
				return a
			}
		}
		return nil
	}
	if n := len(t.segs); n > 0 {
		if r, ok := t.segs[n-1].(*row); ok {
			if a, ok := r.Item.(*assistantItem); ok && !a.Final {
				return a
			}
		}
	}
	return nil
}

func (t *Timeline) newCard(callID string) *Card {
	n := t.idCount[callID] + 1
	t.idCount[callID] = n
	id := cardElemID(callID, n)
	c := &Card{ID: id, CallID: callID, Step: t.step, Turn: t.turn, presenter: t.p}
	t.calls[callID] = append(t.calls[callID], c)
	t.cards = append(t.cards, c)
	t.byElem[id] = c
	if t.turn != nil {
		t.turn.cards = append(t.turn.cards, c)
	}
	return c
}

// openCard returns the latest card of callID still waiting for its result.
func (t *Timeline) openCard(callID string) *Card {
	cs := t.calls[callID]
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Result == nil {
			return cs[i]
		}
	}
	return nil
}

func (t *Timeline) applyResult(u *Update, e *core.Event, d *core.ToolResultData) {
	callID := d.CallID()
	c := t.openCard(callID)
	if c == nil {
		if len(t.calls[callID]) > 0 {
			t.addRaw(u, e, "meta", "a second result for call "+strconv.Quote(callID))
			return
		}
		// The call was never logged (crash repair's TOOL_NOT_STARTED, or an
		// imported fragment): the card is built from the result alone.
		c = t.newCard(callID)
		c.ResultSeq, c.ResultTime, c.Result, c.metaValid = e.Seq, e.Time, d, true
		if req := t.requested[callID]; req != nil {
			c.Name, c.Args, c.Requested = req.Name, req.Arguments, true
		}
		t.addItem(u, c)
		return
	}
	c.Result, c.ResultSeq, c.ResultTime, c.metaValid = d, e.Seq, e.Time, true
	c.Stopped = false
	u.morph(c)
}

// closeStep ends the open step (if any): its unanswered calls stop.
func (t *Timeline) closeStep(u *Update, e *core.Event) {
	s := t.step
	if s == nil {
		return
	}
	t.step = nil
	s.Ended, s.EndSeq, s.EndTime = true, e.Seq, e.Time
	for _, it := range s.Items {
		if c, ok := it.(*Card); ok && c.Result == nil && !c.Stopped {
			c.Stopped, c.StopSeq = true, e.Seq
			u.morph(c)
		}
	}
	u.morph(stepHead{s})
}

// closeTurn ends the open turn (if any) and its open step; reason nil means
// the turn was superseded by a new turn/start without a turn/end.
func (t *Timeline) closeTurn(u *Update, e *core.Event, reason *core.TurnEndReason) {
	r := t.turn
	if r == nil {
		return
	}
	t.closeStep(u, e)
	t.turn = nil
	r.Ended, r.EndSeq, r.EndTime = true, e.Seq, e.Time
	if reason != nil {
		r.End = *reason
	} else {
		r.End = core.TurnEndReason{Kind: "unclosed"}
	}
	for _, c := range r.cards {
		if c.Result == nil && !c.Stopped {
			c.Stopped, c.StopSeq = true, e.Seq
			u.morph(c)
		}
	}
	u.morph(r)
}
