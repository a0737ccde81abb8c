package notes

import (
	"encoding/json"

	"prism/core"
)

// ChildFacts is what link inference reads of a child session: its id,
// creation time and its subagent/descriptor's label.
type ChildFacts struct {
	ID        string
	CreatedAt int64
	Label     string
}

// ChildFactsOf returns the facts of a child session from its header and
// log (the label of its first subagent/descriptor; "" when it has none).
func ChildFactsOf(h core.SessionHeader, events []core.Event) ChildFacts {
	f := ChildFacts{ID: h.ID, CreatedAt: h.CreatedAt}
	for _, e := range events {
		if e.Type != core.EventSubagentDescr {
			continue
		}
		var d struct {
			Label string `json:"label"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			f.Label = d.Label
		}
		break
	}
	return f
}

// subagentCall is one subagent call of a parent's log and its time window.
type subagentCall struct {
	id, description   string
	seq, from, to     int64
	turnEnd           int64 // the time its turn ended (-1: open)
	background, taken bool
}

// InferLinks returns the link notes (Inferred set) of children whose
// spawning call a log did not record (dsh's own export): a child belongs
// to the parent's subagent call whose description equals the child's
// descriptor label and whose time holds the child's createdAt — from its
// tool/call to its tool/result (to the log's end while it has none); failing
// that, to the end of the call's turn (dsh stamps a child's header by its
// own clock, and an export may put it after the call's result: dsh's own
// export fixture does). Among several, the earliest call not yet taken.
// Children that match no call get no note.
func InferLinks(parentID string, parent []core.Event, children []ChildFacts) []Input {
	var calls []*subagentCall
	byID := map[string]*subagentCall{}
	end := int64(0)
	for _, e := range parent {
		end = max(end, e.Time)
		switch e.Type {
		case core.EventTurnEnd:
			for _, sc := range calls {
				if sc.turnEnd < 0 {
					sc.turnEnd = e.Time
				}
			}
		case core.EventToolCall:
			var c core.ToolCall
			if json.Unmarshal(e.Data, &c) != nil || c.Name != "subagent" {
				continue
			}
			args, _ := core.ParseArguments(c.Arguments).(map[string]any)
			desc, _ := args["description"].(string)
			bg, _ := args["background"].(bool)
			sc := &subagentCall{id: c.CallID, description: desc, seq: e.Seq, from: e.Time, to: -1, turnEnd: -1, background: bg}
			calls = append(calls, sc)
			byID[c.CallID] = sc
		case core.EventToolResult:
			var r core.ToolResultData
			if json.Unmarshal(e.Data, &r) == nil {
				if sc := byID[r.CallID()]; sc != nil && sc.to < 0 {
					sc.to = e.Time
				}
			}
		}
	}
	for _, sc := range calls {
		if sc.to < 0 {
			sc.to = end
		}
		if sc.turnEnd < 0 {
			sc.turnEnd = end
		}
	}
	var out []Input
	for _, ch := range children {
		if ch.Label == "" {
			continue
		}
		sc := match(calls, ch, func(sc *subagentCall) int64 { return sc.to })
		if sc == nil {
			sc = match(calls, ch, func(sc *subagentCall) int64 { return sc.turnEnd })
		}
		if sc == nil {
			continue
		}
		in, err := Link(parentID, sc.id, sc.seq, LinkData{Child: ch.ID, Background: sc.background, Inferred: true})
		if err != nil {
			continue
		}
		sc.taken = true
		out = append(out, in)
	}
	return out
}

// match returns the first call not taken whose description is the child's
// label and whose window from its tool/call to until(call) holds the
// child's createdAt.
func match(calls []*subagentCall, ch ChildFacts, until func(*subagentCall) int64) *subagentCall {
	for _, sc := range calls {
		if !sc.taken && sc.description == ch.Label && ch.CreatedAt >= sc.from && ch.CreatedAt <= until(sc) {
			return sc
		}
	}
	return nil
}
