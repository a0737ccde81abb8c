package views

import (
	"testing"

	"prism/core"
	"prism/core/notes"
)

// TestTurnMessageSaysWhyRepairClosedIt: a turn a running prism closed says
// why on its divider, read from the session's "repair" note on its
// turn/end (the log's turn/end is plain dsh); one closed by startup repair
// or import says it was crash repair; a log an older prism wrote with the
// reason inside its turn/end still says why.
func TestTurnMessageSaysWhyRepairClosedIt(t *testing.T) {
	plain := core.TurnEndReason{Kind: core.TurnInterrupted}
	repair := func(at int64, why core.CancelCause) notes.Note {
		in := notes.Repair("s", at, why)
		return notes.Note{ID: "n", Session: "s", Kind: in.Kind, AtSeq: at, Data: in.Data}
	}
	lost := repair(9, core.CancelCause{Kind: core.InterruptNodeLost, Reason: "the node running it stopped or lost its database connection"})
	removedAt := int64(9)
	removed := lost
	removed.RemovedAtSeq = &removedAt
	for _, tt := range []struct {
		name string
		end  core.TurnEndReason
		ns   []notes.Note
		want string
	}{
		{"startup repair", plain, nil, "closed by crash repair"},
		{"node lost, from the note", plain, []notes.Note{lost}, "closed by crash repair: the node running it stopped or lost its database connection"},
		{"a reason kind without text", plain, []notes.Note{repair(9, core.CancelCause{Kind: core.InterruptNodeLost})}, "closed by crash repair: node lost"},
		{"a note on another turn's end", plain, []notes.Note{repair(4, core.CancelCause{Kind: core.InterruptNodeLost})}, "closed by crash repair"},
		{"a removed note", plain, []notes.Note{removed}, "closed by crash repair"},
		{"an older prism's reason in the log", core.TurnEndReason{Kind: core.TurnInterrupted, Reason: &core.CancelCause{Kind: core.InterruptStoreUnreachable, Reason: "the store was unreachable"}}, nil,
			"closed by crash repair: the store was unreachable"},
		{"aborted", core.TurnEndReason{Kind: core.TurnAborted, Reason: &core.CancelCause{Kind: "user"}}, []notes.Note{lost}, "user"},
	} {
		r := R{Notes: tt.ns, Seq: 9}
		if got := turnMessage(&TurnRow{Ended: true, EndSeq: 9, End: tt.end}, r); got != tt.want {
			t.Errorf("%s: turnMessage = %q, want %q", tt.name, got, tt.want)
		}
	}
}
