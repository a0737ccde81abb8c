package core

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// relationTrace is the relational state of a log prefix (dsh's SessionTrace
// plus the tools companion's code-dispatch ancestry).
type relationTrace struct {
	lastSeq  int64
	openTurn *int
	openStep *int
	nextTurn int
	nextStep int
	pending  map[string]bool   // tool/call ids of the open step
	roots    map[string]string // code-dispatch subCallId → rootCallId
}

// fmtOpen formats an optional turn or step number the way JavaScript
// interpolates number | null.
func fmtOpen(n *int) string {
	if n == nil {
		return "null"
	}
	return strconv.Itoa(*n)
}

func intPtr(n int) *int { return &n }

// CheckRelations is the optional relational validator of a session log
// (dsh's session invariant companion, invariant.ts: validateEvent, and the
// code-dispatch checks of the tools companion):
//
//   - seq strictly increases;
//   - turn/start numbers start at 1 and increase by 1, with no turn open;
//   - turn/end matches the open turn and requires no open step;
//   - step/start requires the open turn and no open step, and step numbers
//     start at 1 in each turn and increase by 1;
//   - step/end, assistant/chunk, assistant/message, tool/call and
//     append-origin tool/result name the open turn and step;
//   - an append-origin tool/result needs a tool/call with the same callId in
//     the same step, unless it is the synthetic TOOL_NOT_STARTED result;
//     step/end clears the step's calls;
//   - a tool/result replacement needs only an open turn;
//   - todo/write, request/header and request/context need an open turn;
//     user/message and session/end-seed are allowed anywhere;
//   - tool/code-dispatch-start and tool/code-dispatch carry non-empty
//     rootCallId, parentCallId and subCallId, keep a sub-call's root, name a
//     parent that is the root or a sub-call of it, and need an open turn.
//
// Other event types are unconstrained. The first violation is returned as a
// *Error with CodeInvalid, naming its seq ("seq 7: …"). Session.Append does
// not enforce these relations, as in dsh.
func CheckRelations(events []Event) error {
	t := relationTrace{lastSeq: -1, nextTurn: 1, nextStep: 1, pending: map[string]bool{}, roots: map[string]string{}}
	for i := range events {
		if msg := t.step(&events[i]); msg != "" {
			return Errorf(CodeInvalid, "seq %d: %s", events[i].Seq, msg)
		}
	}
	return nil
}

// step validates ev against the trace and advances it; it returns the
// violation's text, or "" when ev is valid.
func (t *relationTrace) step(ev *Event) string {
	if ev.Seq <= t.lastSeq {
		return fmt.Sprintf("seq must strictly increase: saw %d after %d", ev.Seq, t.lastSeq)
	}
	t.lastSeq = ev.Seq
	switch ev.Type {
	case EventTurnStart:
		var d struct {
			Turn int `json:"turn"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return fmt.Sprintf("turn/start data: %v", err)
		}
		if t.openTurn != nil {
			return fmt.Sprintf("turn/start %d while turn %d is still open", d.Turn, *t.openTurn)
		}
		if d.Turn != t.nextTurn {
			return fmt.Sprintf("turn/start expected turn %d, got %d", t.nextTurn, d.Turn)
		}
		t.openTurn, t.nextStep = intPtr(d.Turn), 1
	case EventTurnEnd:
		var d struct {
			Turn int `json:"turn"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return fmt.Sprintf("turn/end data: %v", err)
		}
		if t.openTurn == nil || *t.openTurn != d.Turn {
			return fmt.Sprintf("turn/end %d does not match open turn %s", d.Turn, fmtOpen(t.openTurn))
		}
		if t.openStep != nil {
			return fmt.Sprintf("turn/end %d while step %d is still open", d.Turn, *t.openStep)
		}
		t.openTurn = nil
		t.nextTurn++
	case EventStepStart:
		var d StepBoundary
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return fmt.Sprintf("step/start data: %v", err)
		}
		if t.openTurn == nil || *t.openTurn != d.Turn {
			return fmt.Sprintf("step/start in turn %d but open turn is %s", d.Turn, fmtOpen(t.openTurn))
		}
		if t.openStep != nil {
			return fmt.Sprintf("step/start %d while step %d is still open", d.Step, *t.openStep)
		}
		if d.Step != t.nextStep {
			return fmt.Sprintf("step/start expected step %d in turn %d, got %d", t.nextStep, d.Turn, d.Step)
		}
		t.openStep = intPtr(d.Step)
	case EventStepEnd:
		if msg := t.requireOpenStep(ev); msg != "" {
			return msg
		}
		clear(t.pending)
		t.openStep = nil
		t.nextStep++
	case EventAssistantChunk, EventAssistantMessage:
		return t.requireOpenStep(ev)
	case EventToolCall:
		if msg := t.requireOpenStep(ev); msg != "" {
			return msg
		}
		var d ToolCall
		_ = json.Unmarshal(ev.Data, &d)
		t.pending[d.CallID] = true
	case EventToolResult:
		if !ev.IsAppendOrigin() {
			// A provenance-backed content rewrite is turn work, not a
			// second execution of the call.
			if t.openTurn == nil {
				return "tool/result surface replacement appended outside any open turn"
			}
			return ""
		}
		if msg := t.requireOpenStep(ev); msg != "" {
			return msg
		}
		var d struct {
			Message struct {
				Content []struct {
					IsError bool `json:"isError"`
				} `json:"content"`
				Source Source `json:"source"`
			} `json:"message"`
			Error *ErrorInfo `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		callID := d.Message.Source.CallID
		notStarted := len(d.Message.Content) > 0 && d.Message.Content[0].IsError &&
			d.Error != nil && d.Error.Code == CodeToolNotStarted
		if !t.pending[callID] && !notStarted {
			return fmt.Sprintf("tool/result for %s with no prior tool/call in this step", callID)
		}
		delete(t.pending, callID)
	case EventTodoWrite, EventRequestHeader, EventRequestContext:
		if t.openTurn == nil {
			return fmt.Sprintf("%s appended outside any open turn (core execution events must be turn-enclosed)", ev.Type)
		}
	case EventCodeDispatchOpen, EventCodeDispatch:
		return t.checkDispatch(ev)
	}
	return ""
}

// requireOpenStep checks that a step-scoped event names the open turn and step.
func (t *relationTrace) requireOpenStep(ev *Event) string {
	var d StepBoundary // every step-scoped payload starts with {turn, step}
	_ = json.Unmarshal(ev.Data, &d)
	if t.openTurn == nil || *t.openTurn != d.Turn || t.openStep == nil || *t.openStep != d.Step {
		return fmt.Sprintf("%s names turn %d/step %d but open is turn %s/step %s",
			ev.Type, d.Turn, d.Step, fmtOpen(t.openTurn), fmtOpen(t.openStep))
	}
	return ""
}

// checkDispatch validates a Code Mode dispatch event's ancestry and turn
// enclosure, then records its root.
func (t *relationTrace) checkDispatch(ev *Event) string {
	var d struct {
		RootCallID   string `json:"rootCallId"`
		ParentCallID string `json:"parentCallId"`
		SubCallID    string `json:"subCallId"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	if d.RootCallID == "" || d.ParentCallID == "" || d.SubCallID == "" {
		return fmt.Sprintf("%s must carry non-empty rootCallId, parentCallId, and subCallId", ev.Type)
	}
	if known, ok := t.roots[d.SubCallID]; ok && known != d.RootCallID {
		return fmt.Sprintf("%s changed rootCallId for subCallId %s", ev.Type, d.SubCallID)
	}
	if d.ParentCallID != d.RootCallID && t.roots[d.ParentCallID] != d.RootCallID {
		return fmt.Sprintf("%s parentCallId %s does not belong to rootCallId %s", ev.Type, d.ParentCallID, d.RootCallID)
	}
	if t.openTurn == nil {
		return fmt.Sprintf("%s appended outside any open turn", ev.Type)
	}
	t.roots[d.SubCallID] = d.RootCallID
	return ""
}
