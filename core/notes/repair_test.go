package notes_test

import (
	"encoding/json"
	"strings"
	"testing"

	"prism/core"
	"prism/core/notes"
)

// TestRepairKind: a "repair" note is the server's (not client-writable),
// holds one of the interrupt reasons, and refuses anything else with a
// message naming what was wrong.
func TestRepairKind(t *testing.T) {
	k, ok := notes.KindOf(notes.KindRepair)
	if !ok || k.Client {
		t.Fatalf("KindOf(repair) = %+v, %v; want a registered server kind", k, ok)
	}
	in := notes.Repair("s", 7, core.CancelCause{Kind: core.InterruptStoreUnreachable, Reason: "the store was unreachable"})
	if in.AtSeq == nil || *in.AtSeq != 7 || in.Kind != notes.KindRepair {
		t.Fatalf("Repair = %+v", in)
	}
	if _, _, err := notes.Check(in); err != nil {
		t.Fatalf("Check(Repair(…)) = %v", err)
	}
	for _, c := range []struct{ data, says string }{
		{`{"reason":{"kind":"bored"}}`, `"bored"`},
		{`{"reason":{"kind":"node-lost","reason":"a\u0007b"}}`, "control characters"},
		{`{"reason":{"kind":"node-lost"},"extra":1}`, "extra"},
		{`[]`, "reason"},
	} {
		_, _, err := notes.Check(notes.Input{Session: "s", Kind: notes.KindRepair, Data: json.RawMessage(c.data)})
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Check(%s) = %v, want invalid naming %s", c.data, err, c.says)
		}
	}
	ns := []notes.Note{{Kind: notes.KindRepair, AtSeq: 7, Data: in.Data}}
	if why, ok := notes.RepairReason(ns, 7, 7); !ok || why.Kind != core.InterruptStoreUnreachable {
		t.Errorf("RepairReason at its turn/end = %+v, %v", why, ok)
	}
	if _, ok := notes.RepairReason(ns, 6, 9); ok {
		t.Errorf("RepairReason of another turn/end found the note")
	}
}
