package storetest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/notes"
)

// testImportInfersLinks: importing dsh's export .zip links the child to
// its parent's subagent call with an inferred link note (the descriptor's
// label is the call's description, the child was created during the
// call), at the call's seq; importing it again adds no second note.
func testImportInfersLinks(t *testing.T, e Engine) {
	st := e.open(t)
	zip := filepath.Join(Fixtures, "export/session-export.zip")
	for range 2 {
		MustImport(t, st, zip)
		got := mustNotes(t, st, ParentID, notes.Query{Kind: notes.KindLink})
		if len(got) != 1 {
			t.Fatalf("link notes of the parent = %+v, want one", got)
		}
		n := got[0]
		d, err := notes.ParseLink(n.Data)
		if err != nil || n.CallID != "call_00_s" || n.AtSeq != 10 || d != (notes.LinkData{Child: ChildID, Inferred: true}) {
			t.Errorf("link note = %+v %+v (%v), want call_00_s at seq 10 → %s inferred", n, d, err, ChildID)
		}
	}
	if got := mustNotes(t, st, ChildID, notes.Query{Kind: notes.KindLink}); len(got) != 0 {
		t.Errorf("the child got link notes: %+v", got)
	}
}

// testImportParentCycleRefused: sessions whose parentSession links form a
// cycle are refused with an error naming the cycle; nothing is stored.
func testImportParentCycleRefused(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	one := int64(1)
	data := MultiSessionJSONL(t, "loop", 3, func(i int, h *core.SessionHeader, _ *[]core.Event) string {
		if i < 2 {
			h.ParentSession, h.Origin, h.DelegationDepth = map[int]string{0: "loop-00001", 1: "loop-00000"}[i], core.OriginSubagent, &one
		}
		return ""
	})
	_, err := st.Import(ctx, "loop.jsonl", bytes.NewReader(data), int64(len(data)))
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "form a cycle") ||
		!strings.Contains(err.Error(), "loop-00000 → loop-00001 → loop-00000") {
		t.Fatalf("import of a cycle = %v, want an INVALID error naming it", err)
	}
	for _, id := range []string{"loop-00000", "loop-00001", "loop-00002"} {
		if _, err := st.Session(ctx, id); core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("session %s stored after the refused import: %v", id, err)
		}
	}
}
