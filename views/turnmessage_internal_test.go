package views

import (
	"testing"

	"prism/core"
)

// TestTurnMessageSaysWhyRepairClosedIt: a turn a running prism closed says
// why on its divider (the store was unreachable, the node stopped); one
// closed by startup repair or import says it was crash repair.
func TestTurnMessageSaysWhyRepairClosedIt(t *testing.T) {
	for _, tt := range []struct {
		end  core.TurnEndReason
		want string
	}{
		{core.TurnEndReason{Kind: core.TurnInterrupted}, "closed by crash repair"},
		{core.TurnEndReason{Kind: core.TurnInterrupted, Reason: &core.CancelCause{Kind: core.InterruptStoreUnreachable, Reason: "the store was unreachable"}},
			"closed by crash repair: the store was unreachable"},
		{core.TurnEndReason{Kind: core.TurnAborted, Reason: &core.CancelCause{Kind: "user"}}, "user"},
	} {
		if got := turnMessage(&TurnRow{Ended: true, End: tt.end}); got != tt.want {
			t.Errorf("turnMessage(%+v) = %q, want %q", tt.end, got, tt.want)
		}
	}
}
