package approval

import "prism/core"

// Waiting returns the approvals a session's log shows waiting for a
// person, oldest first: each approval/asked of its open turn that no
// approval/decided answers (a turn/start or turn/end leaves none waiting,
// as core.Summary counts them). It is how a node that does not run the
// session lists what waits there; Arguments are the asking call's, from its
// tool/call.
func Waiting(sessionID string, events []core.Event) []Pending {
	var out []Pending
	args := map[string]string{}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case core.EventTurnStart, core.EventTurnEnd:
			out = out[:0]
		case core.EventToolCall:
			var c core.ToolCall
			if e.DecodeData(&c) == nil {
				args[c.CallID] = c.Arguments
			}
		case core.EventApprovalAsked:
			var a core.ApprovalAsked
			if e.DecodeData(&a) == nil {
				out = append(out, Pending{ID: a.ID, SessionID: sessionID, CallID: a.CallID, ToolName: a.ToolName,
					Reason: a.Reason, Arguments: args[a.CallID], Seq: e.Seq, AskedAt: e.Time})
			}
		case core.EventApprovalDecided:
			var d core.ApprovalDecided
			if e.DecodeData(&d) == nil {
				for j := range out {
					if out[j].ID == d.ID {
						out = append(out[:j], out[j+1:]...)
						break
					}
				}
			}
		}
	}
	return out
}
