package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"prism/core"
	"prism/core/notes"
)

// testOpenNotesAcrossSessions: OpenNotes lists one kind's notes not
// removed, across sessions, oldest first — an attention firing on two
// sessions is listed until it is removed, a label is not, and a
// session's deletion takes its notes along.
func testOpenNotesAcrossSessions(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	for _, id := range []string{"a", "b", "c"} {
		MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, TurnEvents(0, 1, false)); err != nil {
			t.Fatal(err)
		}
	}
	att := func(s, call, rule string) notes.Note {
		return mustPut(t, st, notes.Input{Session: s, Kind: notes.KindAttention, CallID: call, AtSeq: seqp(2),
			Data: json.RawMessage(`{"rule":"` + rule + `","reason":"r","key":"` + rule + `|x"}`)})
	}
	n1 := att("a", "call_1", "stuck")
	mustPut(t, st, label("b", "", `{"label":"good"}`))
	n2 := att("b", "", "spend")
	n3 := att("c", "", "quiet")
	got, err := st.OpenNotes(ctx, notes.KindAttention)
	if err != nil {
		t.Fatal(err)
	}
	if noteIDs(got) != n1.ID+","+n2.ID+","+n3.ID || got[0].Session != "a" || got[0].CallID != "call_1" || got[1].Session != "b" {
		t.Fatalf("OpenNotes = %v (%+v), want the three attention notes in order", noteIDs(got), got)
	}
	if _, err := st.RemoveNote(ctx, "b", n2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteSession(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	got, err = st.OpenNotes(ctx, notes.KindAttention)
	if err != nil {
		t.Fatal(err)
	}
	if noteIDs(got) != n1.ID {
		t.Fatalf("OpenNotes after a removal and a deletion = %v, want only %s", noteIDs(got), n1.ID)
	}
	labels, err := st.OpenNotes(ctx, notes.KindLabel)
	if err != nil || len(labels) != 1 || labels[0].Session != "b" {
		t.Fatalf("OpenNotes(label) = %+v, %v", labels, err)
	}
}

// testNotesOnce: a note written Once is written for the first of its key
// only — of concurrent writers exactly one succeeds, the others get
// core.CodeConflict — even after the first was removed.
func testNotesOnce(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	in := notes.Input{Session: "s", Kind: notes.KindAttention, Once: true, Data: json.RawMessage(`{"rule":"stuck","reason":"r","key":"stuck|call:call_1"}`)}
	const writers = 8
	errs := make(chan error, writers)
	for range writers {
		go func() {
			_, err := st.PutNote(ctx, in)
			errs <- err
		}()
	}
	var ok, conflicts int
	for range writers {
		switch err := <-errs; {
		case err == nil:
			ok++
		case core.ErrorCode(err) == core.CodeConflict:
			conflicts++
		default:
			t.Fatalf("PutNote: %v", err)
		}
	}
	if ok != 1 || conflicts != writers-1 {
		t.Fatalf("%d written, %d conflicts; want 1 and %d", ok, conflicts, writers-1)
	}
	open := mustNotes(t, st, "s", notes.Query{Kind: notes.KindAttention})
	if len(open) != 1 {
		t.Fatalf("notes = %v", noteIDs(open))
	}
	if _, err := st.RemoveNote(ctx, "s", open[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutNote(ctx, in); core.ErrorCode(err) != core.CodeConflict {
		t.Errorf("Once after the first was removed: %v, want a conflict", err)
	}
	other := in
	other.Data = json.RawMessage(`{"rule":"stuck","reason":"r","key":"stuck|call:call_2"}`)
	if _, err := st.PutNote(ctx, other); err != nil {
		t.Errorf("another key: %v", err)
	}
}
