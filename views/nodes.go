package views

import (
	"sort"
	"strconv"
	"strings"

	"prism/core"
	"prism/core/price"
)

// The nodes of the page model a Timeline folds a log into: segments of the
// flat transcript, the items of a step, and tool cards.

// Segment is one top-level element of the flat transcript: *TurnRow, *Step
// or *row.
type Segment interface {
	// ElemID returns the segment's element id.
	ElemID() string
}

// TurnRow is a turn's divider row: it opens at turn/start and is updated at
// turn/end.
type TurnRow struct {
	Seq, Time int64
	Turn      int
	Ended     bool
	EndSeq    int64
	EndTime   int64
	End       core.TurnEndReason
	// Usage is the turn's token usage by model (its steps' together).
	Usage Usage

	cards []*Card
}

// Usage is token usage by model name: what prices apply to.
type Usage map[string]core.TokenUsage

// Total is the usage of every model together.
func (m Usage) Total() core.TokenUsage {
	var t core.TokenUsage
	for _, u := range m {
		t = t.Add(u)
	}
	return t
}

// unpriced lists the models of u that p has no price for.
func unpriced(u Usage, p price.Table) string {
	var out []string
	for model := range u {
		if _, ok := p[model]; !ok {
			out = append(out, strconv.Quote(model))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// add adds u of model.
func (m *Usage) add(model string, u core.TokenUsage) {
	if *m == nil {
		*m = Usage{}
	}
	(*m)[model] = (*m)[model].Add(u)
}

// Step is a model step and everything logged inside it.
type Step struct {
	Seq, Time int64
	Turn      *TurnRow // nil for a step outside any turn
	TurnNo    int
	StepNo    int
	Ended     bool
	EndSeq    int64 // the event that ended it (step/end, or the turn's end)
	EndTime   int64
	Usage     core.TokenUsage
	HasUsage  bool
	// ByModel is Usage by model, for its cost.
	ByModel Usage
	Items   []Item
	// Meta are the step's request metadata events (request/header,
	// request/context, agent/inbox/spliced), folded into one quiet
	// expandable row in the step's header instead of sitting between
	// messages.
	Meta []*RawItem
}

// row is a loose item: logged outside any step.
type row struct{ Item Item }

// ElemID implements Segment.
func (r *TurnRow) ElemID() string { return "turn-" + strconv.FormatInt(r.Seq, 10) }

// ElemID implements Segment.
func (s *Step) ElemID() string { return "step-" + strconv.FormatInt(s.Seq, 10) }

// HeadID is the id of the step's header row.
func (s *Step) HeadID() string { return s.ElemID() + "-head" }

// ItemsID is the id of the container the step's items are appended to.
func (s *Step) ItemsID() string { return s.ElemID() + "-items" }

// ElemID implements Segment.
func (r *row) ElemID() string { return r.Item.ElemID() }

// Item is one element inside a step (or a loose row): *messageItem,
// *assistantItem, *Card or *RawItem.
type Item interface {
	// ElemID returns the item's element id.
	ElemID() string
}

// messageItem is an append-origin user/message.
type messageItem struct {
	Seq, Time int64
	Message   core.Message
}

// ElemID implements Item.
func (m *messageItem) ElemID() string { return "ev-" + strconv.FormatInt(m.Seq, 10) }

// assistantBlock is one block of an assistant message: text, reasoning, or
// another block shown raw.
type assistantBlock struct {
	Kind string // text | reasoning | other
	Text string
}

// assistantItem is an assistant message, streamed from chunks and finalized
// by assistant/message.
type assistantItem struct {
	Seq, Time   int64 // of the first event (chunk or message)
	EndSeq      int64 // of the last event applied to it
	Blocks      []assistantBlock
	byIndex     map[int]int // stream block index → Blocks index
	Final       bool
	Interrupted bool
	ToolCalls   int
	Usage       *core.TokenUsage
	Model       string
}

// ElemID implements Item.
func (a *assistantItem) ElemID() string { return "asst-" + strconv.FormatInt(a.Seq, 10) }

// RawItem is an event shown as a compact row: an unknown type, a known type
// the transcript has no special form for, a malformed event, or a
// model-only surface replacement.
type RawItem struct {
	Event core.Event
	// Kind is unknown | meta | malformed | replacement.
	Kind string
	// Note explains a malformed event.
	Note string
}

// ElemID implements Item.
func (r *RawItem) ElemID() string { return "ev-" + strconv.FormatInt(r.Event.Seq, 10) }

// Card is a tool call paired (by call id, across the whole log) with its
// append-origin result.
type Card struct {
	ID     string // element id, unique in the session
	CallID string
	Name   string
	Args   string // the raw argument string

	CallSeq, CallTime int64
	HasCall           bool // false for a result whose call was never logged
	// Requested is set when the call was never logged but the assistant
	// message of its step asked for it: Name and Args are that request's
	// (crash repair's "not started" card).
	Requested bool

	Result     *core.ToolResultData
	ResultSeq  int64
	ResultTime int64

	Step    *Step    // may be nil
	Turn    *TurnRow // may be nil
	Stopped bool     // the call's step or turn closed with no result
	StopSeq int64

	// Approval is the call's latest approval (nil: it never asked).
	Approval *CardApproval

	presenter  Presenter
	callView   core.CallView
	resultView core.ResultView
	presented  bool
	// metaValid: Result was decoded from the log by the fold, so its Meta
	// is valid JSON (the call page does not check it again).
	metaValid bool
}

// ElemID implements Item.
func (c *Card) ElemID() string { return c.ID }

// CardApproval is a call's approval as the log tells it: approval/asked,
// then approval/decided.
type CardApproval struct {
	ID     string
	Reason string // why the call asks
	Seq    int64  // of approval/asked
	Time   int64
	// Decided is set by approval/decided, with what it says.
	Decided     bool
	Outcome     core.ApprovalOutcome
	By, Note    string
	Why         string // why no person decided (timeout, cancelled turn, policy, repair)
	DecidedTime int64
}

// Waiting reports whether the approval waits for a person.
func (a *CardApproval) Waiting() bool { return a != nil && !a.Decided }

// Card states.
const (
	StatePending  = "pending"
	StateAwaiting = "awaiting" // waits for a person's approval
	StateRunning  = "running"
	StateOK       = "ok"
	StateError    = "error"
	StateStopped  = "stopped"
)

// State returns pending, awaiting, running, ok, error or stopped.
func (c *Card) State() string {
	if c.Result == nil {
		switch {
		case c.Stopped:
			return StateStopped
		case c.Approval.Waiting():
			return StateAwaiting
		case c.Approval != nil && c.Approval.Outcome == core.ApprovalAllowedOnce:
			return StateRunning
		}
		return StatePending
	}
	if c.Result.Projection().IsError {
		return StateError
	}
	// dsh's rule: a command that exits non-zero or is killed completed;
	// its card shows the exit pill.
	return StateOK
}

// Outcome names a distinct failure shown apart from ordinary errors:
// outcome-unknown and not-started (crash repair), aborted-before-dispatch,
// aborted, or "".
func (c *Card) Outcome() string {
	if c.Result == nil || c.Result.Error == nil {
		return ""
	}
	switch c.Result.Error.Code {
	case core.CodeToolOutcomeUnknown:
		return "outcome-unknown"
	case core.CodeToolNotStarted:
		return "not-started"
	case core.CodeAbortedBeforeDispatch:
		return "aborted-before-dispatch"
	case core.CodeAborted:
		return "aborted"
	}
	return ""
}

// views holds a card's validated views.
type cardViews struct {
	call   core.CallView
	result core.ResultView
}

// Views returns the card's call view (nil when the call was never logged)
// and result view (nil while pending). Presenters run once per card; a nil
// or invalid view falls back to the generic card.
func (c *Card) Views() cardViews {
	c.presentCall()
	if c.Result != nil && c.resultView == nil {
		c.resultView = safeResultView(c.p(), c.Name, c.Args, c.Result.Projection())
	}
	return cardViews{c.callView, c.resultView}
}

// presentCall presents the call view, once.
func (c *Card) presentCall() core.CallView {
	if !c.presented {
		c.presented = true
		if c.HasCall {
			c.callView = safeCallView(c.p(), c.Name, c.Args)
		}
	}
	return c.callView
}

func (c *Card) p() Presenter { return c.presenter }
