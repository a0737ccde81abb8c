package core

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Session statuses, as a Summary derives them.
const (
	// StatusIdle: no turn is open (a new session too).
	StatusIdle = "idle"
	// StatusRunning: a turn is open.
	StatusRunning = "running"
	// StatusEnded: a one-shot subagent's turn ended; the session is over.
	StatusEnded = "ended"
	// StatusInterrupted: the last turn was closed by crash repair.
	StatusInterrupted = "interrupted"
)

// Title lengths, in characters (runes), "…" included.
const (
	titleMaxPrompt = 80  // a title taken from the first user message
	titleMaxNamed  = 200 // a title set by session/title
)

// SummaryVersion numbers the rules of Summary.Apply. A store that keeps
// summaries recomputes those written under an older version.
const SummaryVersion = 3

// Summary is a session's derived state: its title, status, counters and
// timings, folded event by event from its log. It is the one home of these
// rules — the store computes a session's list row with it inside the append
// transaction, and the inspector's header shows the same fold — so a
// session shows the same numbers everywhere.
//
// The rules, per event:
//   - title: the latest non-blank session/title (whitespace collapsed, at
//     most 200 characters); until one is seen, the first non-empty
//     line of the first append-origin user/message from the user (source
//     kind "user"), whitespace collapsed and cut at 80
//     characters on a word boundary with "…";
//   - status: turn/start → running; turn/end{interrupted} → interrupted; any
//     other turn/end → ended for a one-shot subagent (subagent/descriptor
//     with mode "one-shot"), else idle;
//   - calls: every tool/call, plus every crash-repair result for a call that
//     was never logged (an append-origin tool/result with code
//     TOOL_NOT_STARTED that cites no tool/call: repair cites the call of a
//     logged call that waited for approval);
//   - awaiting: approvals waiting for a person — approval/asked adds one,
//     approval/decided takes one, and turn/start and turn/end clear them
//     (an approval never outlives its turn);
//   - results: append-origin tool/results; errors: those whose tool-result
//     block has isError (dsh's rule: a non-zero shell exit is a completed
//     call, not an error);
//   - tokens: the usage of append-origin assistant/messages, in total and
//     by the model that answered (message.source.model; "" when the log
//     names none): Models, sorted by model name;
//   - model: the models named by append-origin assistant/messages, in the
//     order they first answered, joined with ", ";
//   - turns and steps: turn/start and step/start events;
//   - events, last seq, first and last time (the smallest and largest event
//     time; event times may go backwards).
//
// The zero Summary is not ready: start from NewSummary. Apply events in
// seq order; a Summary is not safe for concurrent use.
type Summary struct {
	Title  string `json:"title"`
	Titled bool   `json:"-"` // a session/title set Title
	Status string `json:"status"`
	// OneShot is set by a one-shot subagent's descriptor.
	OneShot bool `json:"-"`

	Events  int64 `json:"events"`
	LastSeq int64 `json:"lastSeq"` // -1 before the first event
	Turns   int64 `json:"turns"`
	Steps   int64 `json:"steps"`
	Calls   int64 `json:"calls"`
	Results int64 `json:"results"`
	Errors  int64 `json:"errors"`
	// Awaiting counts the approvals waiting for a person.
	Awaiting int64 `json:"awaiting"`

	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	// Models is the token usage by model, sorted by model name: what a
	// price table applies to (a session can switch models).
	Models []ModelUsage `json:"models,omitempty"`
	// Model names the models that answered, in the order they first did:
	// "m1", or "m1, m2" after a switch; "" before any assistant message
	// names one.
	Model string `json:"model,omitempty"`

	// FirstTime and LastTime are the smallest and largest event time
	// (epoch ms), 0 before the first event.
	FirstTime int64 `json:"firstTime"`
	LastTime  int64 `json:"lastTime"`
}

// ModelUsage is the token usage of one model in a session.
type ModelUsage struct {
	Model string `json:"model"`
	TokenUsage
}

// addModel folds one assistant message of model (with its usage, when it
// reported any). Models is copied, never changed in place: a Summary is a
// value, and its copies share the slice.
func (s *Summary) addModel(model string, u *TokenUsage) {
	i, found := slices.BinarySearchFunc(s.Models, model, func(m ModelUsage, name string) int { return strings.Compare(m.Model, name) })
	switch {
	case found && u == nil, !found && u == nil && model == "":
		return
	case !found && model != "" && s.Model == "":
		s.Model = model
	case !found && model != "":
		s.Model += ", " + model
	}
	ms := slices.Clone(s.Models)
	if !found {
		ms = slices.Insert(ms, i, ModelUsage{Model: model})
	}
	if u != nil {
		ms[i].TokenUsage = ms[i].TokenUsage.Add(*u)
	}
	s.Models = ms
}

// NewSummary returns the summary of an empty session.
func NewSummary() Summary { return Summary{Status: StatusIdle, LastSeq: -1} }

// Summarize folds a whole log.
func Summarize(events []Event) Summary {
	s := NewSummary()
	for i := range events {
		s.Apply(&events[i])
	}
	return s
}

// EventFacts are what the store and Summary read of one event's data: the
// facts of the summary's rules and the tool call the event belongs to. They
// come from one decode of the data (FactsOf), or from data a caller has
// already decoded (TypedFacts), so an event is not walked again for them.
type EventFacts struct {
	callID     string
	reasonKind string // turn/end
	mode       string // subagent/descriptor
	title      string // session/title
	userSource string // user/message: source kind
	userTexts  []string
	isError    bool   // tool/result: its one tool-result block has isError
	errorCode  string // tool/result: error.code
	usage      *TokenUsage
	model      string      // assistant/message: message.source.model
	texts      *EventTexts // set from an appended value only (appendedFacts)
}

// CallID returns the tool call the event belongs to: tool/call and
// approval/asked name it, a tool/result's message source does, Code Mode
// dispatches name their root call; "" for other events.
func (f *EventFacts) CallID() string { return f.callID }

// factsJSON is the one decode of FactsOf: the fields any rule reads,
// whatever the type.
type factsJSON struct {
	CallID     string `json:"callId"`     // tool/call, approval/asked
	RootCallID string `json:"rootCallId"` // tool/code-dispatch*
	Reason     struct {
		Kind string `json:"kind"`
	} `json:"reason"`
	Mode    string      `json:"mode"`
	Title   string      `json:"title"`
	Content []factBlock `json:"content"` // user/message: the data is the message
	Source  struct {
		Kind   string `json:"kind"`
		CallID string `json:"callId"`
	} `json:"source"`
	Message struct { // tool/result, assistant/message
		Content []resultBlock `json:"content"`
		Source  struct {
			CallID string `json:"callId"`
			Model  string `json:"model"`
		} `json:"source"`
	} `json:"message"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
	Usage *TokenUsage `json:"usage"`
}

type factBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// resultBlock reads a tool result's block without its content (an
// assistant message's blocks decode into it without their text).
type resultBlock struct {
	Type    string `json:"type"`
	IsError bool   `json:"isError"`
}

// summaryReads reports whether Summary's rules read the data of type typ.
func summaryReads(typ string) bool {
	switch typ {
	case EventTurnEnd, EventSubagentDescr, EventSessionTitle, EventUserMessage, EventToolResult, EventAssistantMessage:
		return true
	}
	return false
}

// carriesCallID reports whether events of type typ belong to a tool call.
func carriesCallID(typ string) bool {
	switch typ {
	case EventToolCall, EventApprovalAsked, EventToolResult, EventCodeDispatch, EventCodeDispatchOpen:
		return true
	}
	return false
}

// FactsOf decodes e's facts: once, and only for types that have any. Data
// that does not decode gives the facts that did. (A Session hands a
// CheckedStore the facts of what it appends, computed from the appended
// values: the same facts, without a decode.)
func FactsOf(e *Event) EventFacts {
	if !summaryReads(e.Type) && !carriesCallID(e.Type) {
		return EventFacts{}
	}
	var j factsJSON
	_ = json.Unmarshal(e.Data, &j)
	f := EventFacts{reasonKind: j.Reason.Kind, mode: j.Mode, title: j.Title, usage: j.Usage}
	switch e.Type {
	case EventToolCall, EventApprovalAsked:
		f.callID = j.CallID
	case EventCodeDispatch, EventCodeDispatchOpen:
		f.callID = j.RootCallID
	case EventToolResult:
		f.callID = j.Message.Source.CallID
		c := j.Message.Content
		f.isError = len(c) == 1 && c[0].Type == BlockToolResult && c[0].IsError
		if j.Error != nil {
			f.errorCode = j.Error.Code
		}
	case EventAssistantMessage:
		f.model = j.Message.Source.Model
	case EventUserMessage:
		f.userSource = j.Source.Kind
		for _, b := range j.Content {
			if b.Type == BlockText {
				f.userTexts = append(f.userTexts, b.Text)
			}
		}
	}
	return f
}

// TypedFacts returns e's facts from its data already decoded into core's
// type for it: *TurnEnd, *SessionTitle, *Message (user/message),
// *ToolCall, *ToolResultData, *AssistantMessage, *ApprovalAsked or
// *ApprovalDecided. For other events, or a
// data of another type, it decodes (FactsOf).
func TypedFacts(e *Event, data any) EventFacts {
	var f EventFacts
	switch d := data.(type) {
	case *TurnEnd:
		f.reasonKind = d.Reason.Kind
	case *SessionTitle:
		f.title = d.Title
	case *Message:
		f.userSource = d.Source.Kind
		for _, b := range d.Content {
			if t, ok := b.(*TextBlock); ok {
				f.userTexts = append(f.userTexts, t.Text)
			}
		}
	case *ToolCall:
		f.callID = d.CallID
	case *ToolResultData:
		f.callID = d.CallID()
		if b, ok := d.Message.ToolResultOf(); ok {
			f.isError = b.IsError
		}
		if d.Error != nil {
			f.errorCode = d.Error.Code
		}
	case *AssistantMessage:
		f.usage = d.Usage
		f.model = d.Message.Source.Model
	case *ApprovalAsked:
		f.callID = d.CallID
	case *ApprovalDecided:
	default:
		return FactsOf(e)
	}
	return f
}

// Apply folds one event, decoding what the rules read of it. Events at or
// below LastSeq are ignored. Data that does not decode counts as an event
// without the facts it would carry.
func (s *Summary) Apply(e *Event) {
	if e.Seq <= s.LastSeq {
		return
	}
	var f EventFacts
	if summaryReads(e.Type) {
		f = FactsOf(e)
	}
	s.apply(e, &f)
}

// ApplyFacts folds one event whose facts the caller has (FactsOf,
// TypedFacts). Events at or below LastSeq are ignored.
func (s *Summary) ApplyFacts(e *Event, f *EventFacts) {
	if e.Seq <= s.LastSeq {
		return
	}
	s.apply(e, f)
}

func (s *Summary) apply(e *Event, f *EventFacts) {
	s.Events++
	s.LastSeq = e.Seq
	if s.Events == 1 || e.Time < s.FirstTime {
		s.FirstTime = e.Time
	}
	if s.Events == 1 || e.Time > s.LastTime {
		s.LastTime = e.Time
	}
	appendOrigin := e.IsAppendOrigin()
	switch e.Type {
	case EventTurnStart:
		s.Turns++
		s.Status = StatusRunning
		s.Awaiting = 0
	case EventApprovalAsked:
		s.Awaiting++
	case EventApprovalDecided:
		if s.Awaiting > 0 {
			s.Awaiting--
		}
	case EventTurnEnd:
		s.Awaiting = 0
		switch {
		case f.reasonKind == TurnInterrupted:
			s.Status = StatusInterrupted
		case s.OneShot:
			s.Status = StatusEnded
		default:
			s.Status = StatusIdle
		}
	case EventStepStart:
		s.Steps++
	case EventSubagentDescr:
		if f.mode == "one-shot" {
			s.OneShot = true
		}
	case EventSessionTitle:
		if t := collapseSpace(f.title); t != "" {
			s.Title, s.Titled = cutTitle(t, titleMaxNamed), true
		}
	case EventUserMessage:
		if s.Titled || s.Title != "" || !appendOrigin || f.userSource != SourceUser {
			break
		}
		for _, text := range f.userTexts {
			if line := firstLine(text); line != "" {
				s.Title = cutTitle(line, titleMaxPrompt)
				break
			}
		}
	case EventToolCall:
		s.Calls++
	case EventToolResult:
		if !appendOrigin {
			break
		}
		s.Results++
		if f.isError {
			s.Errors++
		}
		if f.errorCode == CodeToolNotStarted && len(e.SourceEventSeqs) == 0 {
			s.Calls++ // repair's answer to a call that was never logged
		}
	case EventAssistantMessage:
		if !appendOrigin {
			break
		}
		if f.usage != nil {
			s.InputTokens += f.usage.InputTokens
			s.OutputTokens += f.usage.OutputTokens
		}
		s.addModel(f.model, f.usage)
	}
}

// firstLine returns the first line of s with non-space text, its
// whitespace collapsed.
func firstLine(s string) string {
	for s != "" {
		line := s
		if i := strings.IndexAny(s, "\r\n"); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if l := collapseSpace(line); l != "" {
			return l
		}
	}
	return ""
}

// collapseSpace trims s and turns every run of white space into one space.
func collapseSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// cutTitle cuts s (whitespace already collapsed) to at most n characters,
// "…" included: at the last word boundary that keeps at least half of the
// room, else inside the word.
func cutTitle(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	room := n - 1
	cut := room
	if r[room] != ' ' {
		for i := room - 1; i > room/2; i-- {
			if r[i] == ' ' {
				cut = i
				break
			}
		}
	}
	return strings.TrimRight(string(r[:cut]), " ") + "…"
}
