package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/notes"
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

// testCreateForkAllOrNothing: CreateFork stores a fork's row, its seed and
// the fork note on its source in one transaction. A seed the store refuses
// (a seq gap), an unknown source or a taken id leaves no session and no
// note behind, and the error names what failed.
func testCreateForkAllOrNothing(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	src := core.SessionHeader{ID: "fork-src", CreatedAt: 1764500000000}
	if err := st.CreateSession(ctx, src); err != nil {
		t.Fatal(err)
	}
	events := append(TurnEvents(0, 1, false), TurnEvents(8, 2, false)...)
	if err := st.AppendEvents(ctx, src.ID, events); err != nil {
		t.Fatal(err)
	}
	turn := 1
	n, err := core.ForkPrefix(src.ID, events, core.ForkBoundary{AtTurn: &turn})
	if err != nil {
		t.Fatal(err)
	}
	forkNote := func(id string) notes.Input {
		at := int64(n) - 1
		data, err := json.Marshal(notes.ForkData{Session: id, SeedLength: int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		return notes.Input{Session: src.ID, Kind: notes.KindFork, AtSeq: &at, Data: data}
	}
	seedOf := func(id string) (core.SessionHeader, []core.Event) {
		h, seed, err := core.ForkSeed(core.SessionHeader{ID: id, CreatedAt: 1764500001000, ParentSession: src.ID}, events, n, 1764500001000)
		if err != nil {
			t.Fatal(err)
		}
		return h, seed
	}
	gone := func(id string) {
		t.Helper()
		if _, err := st.Session(ctx, id); core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("session %s after a failed fork: err = %v, want %s (no session left behind)", id, err, core.CodeNotFound)
		}
		ns, err := st.Notes(ctx, src.ID, notes.Query{Kind: notes.KindFork})
		if err != nil {
			t.Fatal(err)
		}
		for _, nt := range ns {
			if strings.Contains(string(nt.Data), id) {
				t.Errorf("the source kept a fork note %s of the failed fork %s", nt.Data, id)
			}
		}
	}

	// A seed the store refuses, after the row was written in the same
	// transaction: nothing stays.
	h, seed := seedOf("fork-bad-seed")
	seed[3].Seq = 99
	err = st.CreateFork(ctx, h, seed, forkNote(h.ID))
	if err == nil || !strings.Contains(err.Error(), "seed of fork fork-bad-seed") {
		t.Errorf("CreateFork with a seq gap in the seed = %v, want an error naming the seed of fork fork-bad-seed", err)
	}
	gone(h.ID)

	// The note's source does not exist: the row and the seed go too.
	h, seed = seedOf("fork-no-source")
	note := forkNote(h.ID)
	note.Session = "no-such-source"
	err = st.CreateFork(ctx, h, seed, note)
	if core.ErrorCode(err) != core.CodeNotFound || !strings.Contains(err.Error(), "no-such-source") {
		t.Errorf("CreateFork noting an unknown source = %v, want %s naming no-such-source", err, core.CodeNotFound)
	}
	gone(h.ID)

	// The whole fork.
	h, seed = seedOf("fork-ok")
	if err := st.CreateFork(ctx, h, seed, forkNote(h.ID)); err != nil {
		t.Fatalf("CreateFork = %v", err)
	}
	l, err := st.LoadSession(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != len(seed) || l.Info.Header.ParentSession != src.ID || l.Info.Source != store.SourceLive {
		t.Errorf("the fork = %d events, parent %q, source %q; want %d events, parent %s, source %s",
			len(l.Events), l.Info.Header.ParentSession, l.Info.Source, len(seed), src.ID, store.SourceLive)
	}
	ns, err := st.Notes(ctx, src.ID, notes.Query{Kind: notes.KindFork})
	if err != nil || len(ns) != 1 || !strings.Contains(string(ns[0].Data), `"fork-ok"`) || ns[0].AtSeq != int64(n)-1 {
		t.Errorf("the source's fork notes = %+v, %v; want one naming fork-ok at seq %d", ns, err, n-1)
	}

	// A taken id: a conflict, and the stored fork is untouched.
	err = st.CreateFork(ctx, h, seed, forkNote(h.ID))
	if core.ErrorCode(err) != core.CodeSessionAlreadyExists || !strings.Contains(err.Error(), `"fork-ok"`) {
		t.Errorf("CreateFork of a taken id = %v, want %s naming the id", err, core.CodeSessionAlreadyExists)
	}
	if ns, _ := st.Notes(ctx, src.ID, notes.Query{Kind: notes.KindFork}); len(ns) != 1 {
		t.Errorf("after a refused second fork the source has %d fork notes, want 1", len(ns))
	}
}
