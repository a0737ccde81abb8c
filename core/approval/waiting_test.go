package approval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/approval"
)

// TestWaitingMatchesPending: what the log shows waiting is what the
// service that runs the session lists, and nothing once decided.
func TestWaitingMatchesPending(t *testing.T) {
	r := newRig(t, approval.Config{}, noteSteps)
	id := r.start(t)
	r.next(t, core.EventApprovalAsked)
	sess, err := r.runner.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	want := r.svc.Pending()
	if got := approval.Waiting(id, sess.Events()); len(want) != 1 || !cmp.Equal(got, want) {
		t.Errorf("Waiting from the log differs from Pending (-log +service):\n%s", cmp.Diff(got, want))
	}
	if _, err := r.svc.Decide(context.Background(), id, want[0].ID, approval.Decision{Approve: true, By: "t"}); err != nil {
		t.Fatal(err)
	}
	r.next(t, core.EventTurnEnd)
	if got := approval.Waiting(id, sess.Events()); len(got) != 0 {
		t.Errorf("after the decision: %+v waiting", got)
	}
}

// TestWaitingReadsTheOpenTurn: a decided approval leaves the list, and a
// turn boundary clears it, as core.Summary counts them.
func TestWaitingReadsTheOpenTurn(t *testing.T) {
	ev := func(seq int64, typ string, data any) core.Event {
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		return core.Event{Seq: seq, Type: typ, Time: 1000 + seq, Data: b}
	}
	log := []core.Event{
		ev(0, core.EventTurnStart, core.TurnStart{Turn: 1}),
		ev(1, core.EventApprovalAsked, core.ApprovalAsked{ID: "old", ToolName: "bash"}),
		ev(2, core.EventTurnEnd, map[string]any{"turn": 1, "reason": map[string]string{"kind": "interrupted"}}),
		ev(3, core.EventTurnStart, core.TurnStart{Turn: 2}),
		ev(4, core.EventToolCall, core.ToolCall{Turn: 2, Step: 1, CallID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}),
		ev(5, core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1", Reason: "rule bash"}),
		ev(6, core.EventToolCall, core.ToolCall{Turn: 2, Step: 1, CallID: "c2", Name: "write", Arguments: `{}`}),
		ev(7, core.EventApprovalAsked, core.ApprovalAsked{ID: "a2", ToolName: "write", CallID: "c2"}),
		ev(8, core.EventApprovalDecided, core.ApprovalDecided{ID: "a2", Outcome: core.ApprovalRejected}),
	}
	want := []approval.Pending{{ID: "a1", SessionID: "s", CallID: "c1", ToolName: "bash", Reason: "rule bash", Arguments: `{"command":"ls"}`, Seq: 5, AskedAt: 1005}}
	if got := approval.Waiting("s", log); !cmp.Equal(got, want) {
		t.Errorf("Waiting (-got +want):\n%s", cmp.Diff(got, want))
	}
	log = append(log, ev(9, core.EventTurnEnd, map[string]any{"turn": 2, "reason": map[string]string{"kind": "interrupted"}}))
	if got := approval.Waiting("s", log); len(got) != 0 {
		t.Errorf("after turn/end: %+v", got)
	}
}
