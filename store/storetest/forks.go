package storetest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/store"
)

// testForkIsNotAChild: origin "subagent" is the one mark of a child. A
// fork (parentSession with seedLength, no such origin) imports without its
// source, is listed on its own (top level, no "child of"), and survives its
// source's deletion and the source's retention; a subagent of the same
// source goes with it.
func testForkIsNotAChild(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	seed := int64(2)
	one := int64(1)
	data := MultiSessionJSONL(t, "fam", 3, func(i int, h *core.SessionHeader, events *[]core.Event) string {
		for k := range *events {
			(*events)[k].Time = 1_000 // long ago: past any retention
		}
		switch i {
		case 1: // a fork of fam-00000
			h.ParentSession, h.SeedLength = "fam-00000", &seed
		case 2: // a subagent of fam-00000
			h.ParentSession, h.Origin, h.DelegationDepth = "fam-00000", core.OriginSubagent, &one
		}
		return ""
	})
	// A fork whose source is in neither the file nor the store imports.
	lone := MultiSessionJSONL(t, "lone", 1, func(_ int, h *core.SessionHeader, events *[]core.Event) string {
		for k := range *events {
			(*events)[k].Time = 1_000
		}
		h.ParentSession, h.SeedLength = "nowhere", &seed
		return ""
	})
	if _, err := st.Import(ctx, "lone.jsonl", bytes.NewReader(lone), int64(len(lone))); err != nil {
		t.Fatalf("a fork without its source was refused: %v", err)
	}
	res, err := st.Import(ctx, "fam.jsonl", bytes.NewReader(data), int64(len(data)))
	if err != nil || len(res) != 3 {
		t.Fatalf("Import = %+v, %v", res, err)
	}
	if res[1].ParentID != "" || res[2].ParentID != "fam-00000" {
		t.Errorf("import results' parents = %q, %q; want none for the fork, fam-00000 for the subagent", res[1].ParentID, res[2].ParentID)
	}
	if info, err := st.Session(ctx, "fam-00001"); err != nil || info.ParentID != "" || info.Header.ParentSession != "fam-00000" {
		t.Errorf("the fork's row = parent %q, header parent %q (%v); want no parent, its header kept", info.ParentID, info.Header.ParentSession, err)
	}
	ids := func(o store.ListOptions) []string {
		page, err := st.ListSessions(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range page.Sessions {
			out = append(out, s.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := ids(store.ListOptions{TopLevel: true}); !slices.Equal(got, []string{"fam-00000", "fam-00001", "lone-00000"}) {
		t.Errorf("top level = %v, want the source, the fork and the lone fork", got)
	}
	if got := ids(store.ListOptions{ParentID: "fam-00000"}); !slices.Equal(got, []string{"fam-00002"}) {
		t.Errorf("children of the source = %v, want only the subagent", got)
	}
	d, err := st.DeleteSession(ctx, "fam-00000")
	if err != nil || !slices.Equal(d.Subagents, []string{"fam-00002"}) {
		t.Fatalf("DeleteSession = %+v, %v; want the subagent deleted with its parent, not the fork", d, err)
	}
	if _, err := st.Session(ctx, "fam-00001"); err != nil {
		t.Errorf("the fork did not survive its source's deletion: %v", err)
	}
	// Retention takes the forks as sessions of their own.
	got, err := st.DeleteEndedBefore(ctx, time.UnixMilli(10_000))
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, d := range got {
		gone = append(gone, d.SessionID)
	}
	slices.Sort(gone)
	if strings.Join(gone, ",") != "fam-00001,lone-00000" {
		t.Errorf("DeleteEndedBefore = %v, want both forks", gone)
	}
}
