package core

import (
	"encoding/json"
	"fmt"
)

// Crash-repair texts: the model-facing content of the synthetic results
// (dsh's repair.ts, verbatim).
const (
	// ToolNotStartedText answers an assistant tool-call block whose
	// tool/call was never logged.
	ToolNotStartedText = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
	// ToolOutcomeUnknownText answers a logged tool/call with no result
	// whose body may have run.
	ToolOutcomeUnknownText = "The tool call was interrupted after it was recorded, but no result was durably recorded. " +
		"Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is " +
		"read-only or idempotent; if it may have side effects, first verify external state or ask the user. " +
		"Do not retry blindly."
)

// ApprovalInterruptedReason is why crash repair decides an approval that
// was still waiting: approval/decided{cancelled} carries it.
const ApprovalInterruptedReason = "the server stopped while the call waited for approval"

// pendingCall is an assistant tool-call block awaiting its tool/result.
type pendingCall struct {
	callID  string
	step    int
	callSeq int64 // seq of its tool/call; -1 if none was logged
	done    bool  // removed (answered); kept to preserve insertion order
	// approval is the id of the call's latest approval/asked ("" = none);
	// decided and granted say what its approval/decided was.
	approval         string
	decided, granted bool
}

// heldBack reports whether the call's body certainly never ran: it waited
// for an approval that was not granted (undecided, or decided otherwise).
func (p *pendingCall) heldBack() bool { return p.approval != "" && !p.granted }

// pendingCalls is an insertion-ordered map of call id to pending call with
// the semantics of a JavaScript Map: re-setting a key keeps its position,
// deleting and re-adding moves it to the end.
type pendingCalls struct {
	list  []pendingCall
	index map[string]int
	// byApproval maps an approval id to the call it asked about.
	byApproval map[string]string
}

func (p *pendingCalls) set(callID string, step int) {
	if p.index == nil {
		p.index = map[string]int{}
	}
	if i, ok := p.index[callID]; ok {
		p.list[i] = pendingCall{callID: callID, step: step, callSeq: -1}

		return
	}
	p.index[callID] = len(p.list)
	p.list = append(p.list, pendingCall{callID: callID, step: step, callSeq: -1})
}

func (p *pendingCalls) get(callID string) *pendingCall {
	if i, ok := p.index[callID]; ok {
		return &p.list[i]
	}
	return nil
}

func (p *pendingCalls) delete(callID string) {
	if i, ok := p.index[callID]; ok {
		p.list[i].done = true
		delete(p.index, callID)
	}
}

func (p *pendingCalls) clear() { *p = pendingCalls{} }

// InterruptedTurnClosers returns the deterministic events dsh's crash repair
// (repair.ts: interruptedTurnClosers) appends to a log whose last turn is
// open, or nil when the log is empty or its last turn is closed.
//
// Pending calls are the tool-call blocks of assistant messages since the
// last turn or step boundary that no tool/result (matched by
// message.source.callId) has answered; a tool/call only marks a call that an
// assistant block registered as started. For each, in transcript order, a
// synthetic error tool/result: TOOL_OUTCOME_UNKNOWN citing the tool/call seq
// in sourceEventSeqs when the call was logged, TOOL_NOT_STARTED without
// sourceEventSeqs otherwise; its message id is
// "interrupted-tool-result-<callId>-<seq>". Then step/end if a step is open,
// then turn/end{interrupted}. Seqs continue the log; every closer reuses the
// last event's time.
//
// Approvals (prism's addition; dsh's repair does not know them): a logged
// call whose latest approval/asked was not granted never ran its body, so
// its result is TOOL_NOT_STARTED, citing the tool/call seq; an approval
// still waiting is first decided as cancelled (approval/decided with
// ApprovalInterruptedReason), so no approval is left open. A granted call
// may have run: TOOL_OUTCOME_UNKNOWN as usual.
//
// The turn/end is plain dsh, {kind: interrupted} without a reason: why a
// running prism closed the turn (the Interrupt* kinds) is a note beside
// the log (notes.KindRepair), never in it.
func InterruptedTurnClosers(events []Event) []Event {
	var (
		openTurn *int
		openStep *int
		pending  pendingCalls
	)
	// A turn/end resets all of it: only what follows the last one counts
	// (an imported history is mostly closed turns, each decoded for
	// nothing otherwise).
	from := 0
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == EventTurnEnd {
			from = i + 1
			break
		}
	}
	for i := from; i < len(events); i++ {
		ev := &events[i]
		switch ev.Type {
		case EventTurnStart:
			var d TurnStart
			_ = json.Unmarshal(ev.Data, &d)
			openTurn, openStep = &d.Turn, nil
			pending.clear()
		case EventTurnEnd:
			openTurn, openStep = nil, nil
			pending.clear()
		case EventStepStart:
			var d StepBoundary
			_ = json.Unmarshal(ev.Data, &d)
			openStep = &d.Step
		case EventStepEnd:
			pending.clear()
			openStep = nil
		case EventAssistantMessage:
			// Decode only what repair reads, so one odd block elsewhere in
			// the message cannot hide the calls.
			var d struct {
				Step    int `json:"step"`
				Message struct {
					Content []struct {
						Type string `json:"type"`
						ID   string `json:"id"`
					} `json:"content"`
				} `json:"message"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			for _, b := range d.Message.Content {
				if b.Type == BlockToolCall {
					pending.set(b.ID, d.Step)
				}
			}
		case EventToolCall:
			var d ToolCall
			_ = json.Unmarshal(ev.Data, &d)
			if p := pending.get(d.CallID); p != nil {
				p.callSeq = ev.Seq
			}
		case EventApprovalAsked:
			var d ApprovalAsked
			_ = json.Unmarshal(ev.Data, &d)
			if p := pending.get(d.CallID); p != nil && p.callSeq >= 0 && d.ID != "" {
				p.approval, p.decided, p.granted = d.ID, false, false
				if pending.byApproval == nil {
					pending.byApproval = map[string]string{}
				}
				pending.byApproval[d.ID] = d.CallID
			}
		case EventApprovalDecided:
			var d ApprovalDecided
			_ = json.Unmarshal(ev.Data, &d)
			if p := pending.get(pending.byApproval[d.ID]); p != nil && p.approval == d.ID {
				p.decided, p.granted = true, d.Outcome == ApprovalAllowedOnce
			}
		case EventToolResult:
			var d struct {
				Message struct {
					Source Source `json:"source"`
				} `json:"message"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			pending.delete(d.Message.Source.CallID)
		}
	}
	if openTurn == nil || len(events) == 0 {
		return nil
	}
	last := events[len(events)-1]
	seq, now := last.Seq+1, last.Time
	var closers []Event
	add := func(typ string, data any, op *SurfaceOp, sources []int64) {
		raw, err := Snapshot(data)
		if err != nil { // our own fixed shapes always encode
			panic(fmt.Sprintf("core: crash-repair closer %s: %v", typ, err))
		}
		closers = append(closers, Event{Type: typ, Seq: seq, Time: now, Data: raw, SurfaceOp: op, SourceEventSeqs: sources})
		seq++
	}
	for _, p := range pending.list {
		if p.done {
			continue
		}
		text, info := ToolNotStartedText, &ErrorInfo{Name: "ToolNotStartedError", Code: CodeToolNotStarted}
		var sources []int64
		switch {
		case p.heldBack():
			if !p.decided {
				add(EventApprovalDecided, ApprovalDecided{ID: p.approval, Outcome: ApprovalCancelled, Reason: ApprovalInterruptedReason}, nil, nil)
			}
			sources = []int64{p.callSeq}
		case p.callSeq >= 0:
			text, info = ToolOutcomeUnknownText, &ErrorInfo{Name: "ToolOutcomeUnknownError", Code: CodeToolOutcomeUnknown}
			sources = []int64{p.callSeq}
		}
		id := fmt.Sprintf("interrupted-tool-result-%s-%d", p.callID, seq)
		add(EventToolResult, ToolResultData{
			Turn:    *openTurn,
			Step:    p.step,
			Message: NewToolResultMessage(id, p.callID, Text(text), true),
			Error:   info,
		}, &SurfaceOp{}, sources)
	}
	if openStep != nil {
		add(EventStepEnd, StepBoundary{Turn: *openTurn, Step: *openStep}, nil, nil)
	}
	add(EventTurnEnd, TurnEnd{Turn: *openTurn, Reason: TurnEndReason{Kind: TurnInterrupted}}, nil, nil)
	return closers
}

// Why a turn was closed by crash repair while prism ran (prism's addition:
// dsh's turn/end{interrupted} carries no reason, so the why is recorded as
// a note of kind "repair" beside the log, never in it).
const (
	// InterruptStoreUnreachable: the node running the session could not
	// commit its events because the store was unreachable (a database
	// outage); the session refused further appends.
	InterruptStoreUnreachable = "store-unreachable"
	// InterruptNodeLost: the node running the session stopped (or lost its
	// database connection) without closing the turn.
	InterruptNodeLost = "node-lost"
	// InterruptStoreRefused: the store refused the session's events for
	// another reason than being unreachable; the session refused further
	// appends.
	InterruptStoreRefused = "store-refused"
)
