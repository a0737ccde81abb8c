package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/sources/dsh"
	"prism/store"
)

// label is a label note's input on session s (call "" = the session).
func label(s, call, data string) notes.Input {
	return notes.Input{Session: s, Kind: notes.KindLabel, CallID: call, Author: "owner", Data: json.RawMessage(data)}
}

func mustPut(t *testing.T, st Store, in notes.Input) notes.Note {
	t.Helper()
	n, err := st.PutNote(context.Background(), in)
	if err != nil {
		t.Fatalf("PutNote(%+v): %v", in, err)
	}
	return n
}

func mustNotes(t *testing.T, st Store, s string, q notes.Query) []notes.Note {
	t.Helper()
	ns, err := st.Notes(context.Background(), s, q)
	if err != nil {
		t.Fatalf("Notes(%s, %+v): %v", s, q, err)
	}
	return ns
}

func noteIDs(ns []notes.Note) string {
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.ID
	}
	return strings.Join(ids, ",")
}

func seqp(v int64) *int64 { return &v }

// testNotesLifecycle: a note is stored beside the log with the session's
// last seq as its AtSeq and its data byte for byte; an edit replaces the
// data and keeps AtSeq; a removal records RemovedAtSeq, so a query as of
// a seq shows the note exactly between the two; ?kind filters.
func testNotesLifecycle(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	// Lossless: the score's text and the keys' order are kept, only the
	// spaces between tokens go.
	n := mustPut(t, st, label("s", "call_1", `{"label":"wrong", "score":0.10, "note":"see **this**"}`))
	if n.ID == "" || n.Session != "s" || n.Kind != notes.KindLabel || n.CallID != "call_1" || n.AtSeq != 7 || n.Author != "owner" ||
		string(n.Data) != `{"label":"wrong","score":0.10,"note":"see **this**"}` || n.RemovedAtSeq != nil {
		t.Fatalf("PutNote = %+v", n)
	}
	sess := mustPut(t, st, label("s", "", `{"label":"good"}`))
	link := mustPut(t, st, notes.Input{Session: "s", Kind: notes.KindLink, CallID: "call_1", AtSeq: seqp(4), Data: json.RawMessage(`{"child":"c"}`)})
	if link.AtSeq != 4 || sess.CallID != "" {
		t.Fatalf("link = %+v, session label = %+v", link, sess)
	}
	got := mustNotes(t, st, "s", notes.Query{})
	if noteIDs(got) != n.ID+","+sess.ID+","+link.ID {
		t.Fatalf("Notes = %v, want label, session label, link", noteIDs(got))
	}
	if string(got[0].Data) != string(n.Data) || got[0].AtSeq != 7 || got[0].Time != n.Time {
		t.Errorf("stored note = %+v, want %+v", got[0], n)
	}
	if got := mustNotes(t, st, "s", notes.Query{Kind: notes.KindLink}); noteIDs(got) != link.ID {
		t.Errorf("Notes(kind link) = %v", noteIDs(got))
	}
	if got := mustNotes(t, st, "s", notes.Query{ID: sess.ID}); noteIDs(got) != sess.ID {
		t.Errorf("Notes(id) = %v", noteIDs(got))
	}

	// Edit: the data replaced, the last write wins; kind, call, AtSeq stay.
	if err := st.AppendEvents(ctx, "s", TurnEvents(8, 2, false)); err != nil {
		t.Fatal(err)
	}
	ed := mustPut(t, st, notes.Input{ID: n.ID, Session: "s", Kind: notes.KindLabel, Author: "tab-2", Data: json.RawMessage(`{"label":"slow"}`)})
	if ed.ID != n.ID || ed.AtSeq != 7 || ed.CallID != "call_1" || ed.Author != "tab-2" || string(ed.Data) != `{"label":"slow"}` {
		t.Errorf("edited = %+v", ed)
	}
	if got := mustNotes(t, st, "s", notes.Query{ID: n.ID}); len(got) != 1 || string(got[0].Data) != `{"label":"slow"}` {
		t.Errorf("after the edit Notes = %+v", got)
	}
	if _, err := st.PutNote(ctx, notes.Input{ID: link.ID, Session: "s", Kind: notes.KindLabel, Data: json.RawMessage(`{"label":"x"}`)}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("edit of a link note as a label: %v, want INVALID", err)
	}

	// Remove: from the session's last seq (15) on, it no longer applies.
	rm, err := st.RemoveNote(ctx, "s", n.ID)
	if err != nil || rm.RemovedAtSeq == nil || *rm.RemovedAtSeq != 15 || rm.RemovedAt == 0 {
		t.Fatalf("RemoveNote = %+v, %v", rm, err)
	}
	if got := mustNotes(t, st, "s", notes.Query{Kind: notes.KindLabel}); noteIDs(got) != sess.ID {
		t.Errorf("after removal Notes = %v, want the session label only", noteIDs(got))
	}
	if got := mustNotes(t, st, "s", notes.Query{Kind: notes.KindLabel, Removed: true}); noteIDs(got) != n.ID+","+sess.ID {
		t.Errorf("Notes(Removed) = %v, want the removed label too", noteIDs(got))
	}
	for seq, want := range map[int64]bool{6: false, 7: true, 10: true, 14: true, 15: false, 20: false} {
		got := mustNotes(t, st, "s", notes.Query{ID: n.ID, AsOf: seqp(seq)})
		if (len(got) == 1) != want {
			t.Errorf("as of %d the removed note is shown %v, want %v", seq, len(got) == 1, want)
		}
		if want && (!got[0].AppliesAt(seq) || got[0].RemovedAtSeq == nil) {
			t.Errorf("as of %d: %+v", seq, got[0])
		}
	}
	if _, err := st.RemoveNote(ctx, "s", n.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("removing twice: %v, want NOT_FOUND", err)
	}
	if _, err := st.PutNote(ctx, notes.Input{ID: n.ID, Session: "s", Kind: notes.KindLabel, Data: json.RawMessage(`{"label":"x"}`)}); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("editing a removed note: %v, want NOT_FOUND", err)
	}
	// Notes never touch the log.
	if ev, err := st.EventsAfter(ctx, "s", -1); err != nil || len(ev) != 16 {
		t.Errorf("the log holds %d events (%v), want its 16", len(ev), err)
	}
}

// testNotesRefuseBadInput: each bad note is refused with an error that
// names what was wrong, and nothing is written.
func testNotesRefuseBadInput(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	big := `{"label":"wrong","note":"` + strings.Repeat("x", notes.MaxData) + `"}`
	for _, c := range []struct {
		name string
		in   notes.Input
		code string
		says string
	}{
		{"unknown session", label("nope", "", `{"label":"x"}`), core.CodeNotFound, "nope"},
		{"call not in the session", label("s", "call_9", `{"label":"x"}`), core.CodeNotFound, "call_9"},
		{"unknown kind", notes.Input{Session: "s", Kind: "mood", Data: json.RawMessage(`{}`)}, core.CodeInvalid, "mood"},
		{"past 64 KiB", label("s", "", big), core.CodeTooLarge, "limit"},
		{"control character", label("s", "", `{"label":"wr\u0007ong"}`), core.CodeInvalid, "control"},
		{"empty label", label("s", "", `{"label":" "}`), core.CodeInvalid, "empty"},
		{"unknown field", label("s", "", `{"label":"x","colour":"red"}`), core.CodeInvalid, "colour"},
		{"score not a number", label("s", "", `{"label":"x","score":"high"}`), core.CodeInvalid, "score"},
		{"lossy number", label("s", "", `{"label":"x","score":1e400}`), core.CodeInvalid, "data"},
		{"not JSON", label("s", "", `{"label":`), core.CodeInvalid, "data"},
		{"unknown note", notes.Input{ID: "n-none", Session: "s", Kind: notes.KindLabel, Data: json.RawMessage(`{"label":"x"}`)}, core.CodeNotFound, "n-none"},
	} {
		_, err := st.PutNote(ctx, c.in)
		if core.ErrorCode(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %s naming %q", c.name, err, c.code, c.says)
		}
	}
	if got := mustNotes(t, st, "s", notes.Query{}); len(got) != 0 {
		t.Errorf("bad notes were stored: %+v", got)
	}
	if _, err := st.Notes(ctx, "nope", notes.Query{}); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("Notes of an unknown session: %v", err)
	}
	if _, err := st.RemoveNote(ctx, "s", "n-none"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("RemoveNote of an unknown note: %v", err)
	}
}

// testNotesCommittedHook: every note write reaches the commit hook as a
// Commit with Notes set (on PostgreSQL through its own NOTIFY channel).
func testNotesCommittedHook(t *testing.T, e Engine) {
	ctx := context.Background()
	got := make(chan store.Commit, 64)
	st, _ := e.Open(t, Options{Committed: func(c store.Commit) { got <- c }})
	MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	wait := func(what string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case c := <-got:
				if c.SessionID == "s" && c.Notes {
					if len(c.Events) != 0 || c.Created || c.Replaced || c.Deleted {
						t.Errorf("%s: commit %+v carries more than notes", what, c)
					}
					return
				}
			case <-deadline:
				t.Fatalf("%s: no commit with Notes set", what)
			}
		}
	}
	n := mustPut(t, st, label("s", "call_1", `{"label":"wrong"}`))
	wait("put")
	mustPut(t, st, notes.Input{ID: n.ID, Session: "s", Kind: notes.KindLabel, Data: json.RawMessage(`{"label":"slow"}`)})
	wait("edit")
	if _, err := st.RemoveNote(ctx, "s", n.ID); err != nil {
		t.Fatal(err)
	}
	wait("remove")
}

// testNotesGoWithTheirSession: deleting a session deletes its notes.
func testNotesGoWithTheirSession(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	for _, id := range []string{"s", "keep"} {
		MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, TurnEvents(0, 1, false)); err != nil {
			t.Fatal(err)
		}
		mustPut(t, st, label(id, "call_1", `{"label":"wrong"}`))
		mustPut(t, st, label(id, "", `{"label":"good"}`))
	}
	if _, err := st.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if n := e.Count(t, st, "SELECT count(*) FROM notes WHERE session_id = 's'"); n != 0 {
		t.Errorf("%d notes of the deleted session remain", n)
	}
	if n := len(mustNotes(t, st, "keep", notes.Query{})); n != 2 {
		t.Errorf("the other session has %d notes, want 2", n)
	}
	if _, err := st.Notes(ctx, "s", notes.Query{}); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("Notes of a deleted session: %v", err)
	}
}

// testNotesSurviveAReplacedLog: a replaced log (the watcher, import
// --replace) keeps the notes whose call ids it still has, and the
// session's own notes.
func testNotesSurviveAReplacedLog(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	h := Header("s")
	log := append(TurnEvents(0, 1, false), TurnEvents(8, 2, false)...)
	if _, _, err := st.SyncLog(ctx, h, log, store.SourceWatch, false); err != nil {
		t.Fatal(err)
	}
	one := mustPut(t, st, label("s", "call_1", `{"label":"wrong"}`))
	two := mustPut(t, st, label("s", "call_2", `{"label":"slow"}`))
	sess := mustPut(t, st, label("s", "", `{"label":"good"}`))
	// The file was rewritten: turn 1 failed, and there is no turn 2.
	outcome, _, err := st.SyncLog(ctx, h, TurnEvents(0, 1, true), store.SourceWatch, true)
	if err != nil || outcome != store.ImportReplaced {
		t.Fatalf("SyncLog = %s, %v; want replaced", outcome, err)
	}
	if got := mustNotes(t, st, "s", notes.Query{}); noteIDs(got) != one.ID+","+sess.ID {
		t.Errorf("after the replacement Notes = %v, want %s (call_1) and %s (the session), not %s (call_2)", noteIDs(got), one.ID, sess.ID, two.ID)
	}
}

// hitKeys names search hits as session/kind/call.
func hitKeys(hits []store.SearchHit) string {
	keys := make([]string, len(hits))
	for i, h := range hits {
		keys[i] = h.SessionID + "/" + h.Kind + "/" + h.CallID
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// testSearchFindsLabels: label: and has: find what people labelled —
// a call's label its card, a session's label every hit of the session —
// through the notes table (nothing of a note enters the search
// documents), still after a reindex, and no longer once removed.
func testSearchFindsLabels(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", append(TurnEvents(0, 1, false), TurnEvents(8, 2, false)...)); err != nil {
		t.Fatal(err)
	}
	MustCreate(t, st, "t")
	if err := st.AppendEvents(ctx, "t", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	wrong := mustPut(t, st, label("s", "call_2", `{"label":"Wrong","note":"zqnote words"}`))
	mustPut(t, st, label("t", "", `{"label":"good"}`))
	check := func(when string) {
		t.Helper()
		if got := hitKeys(searchAll(t, st, "label:wrong")); got != "s/call/call_2" {
			t.Errorf("%s: label:wrong found %q, want s's card of call_2", when, got)
		}
		if got := hitKeys(searchAll(t, st, "has:comment")); got != "s/call/call_2" {
			t.Errorf("%s: has:comment found %q", when, got)
		}
		tAll := hitKeys(searchAll(t, st, "session:t"))
		if got := hitKeys(searchAll(t, st, "label:good")); got != tAll || got == "" {
			t.Errorf("%s: label:good (on session t) found %q, want all of t: %q", when, got, tAll)
		}
		if got := hitKeys(searchAll(t, st, "tool:note -label:wrong")); strings.Contains(got, "s/call/call_2") || !strings.Contains(got, "s/call/call_1") {
			t.Errorf("%s: tool:note -label:wrong found %q, want s's call_1 and not its call_2", when, got)
		}
		if got := hitKeys(searchAll(t, st, "zqnote")); got != "" {
			t.Errorf("%s: a note's text entered the search documents: %q", when, got)
		}
	}
	check("labelled")
	e.Unindex(t, st) // the index is rebuilt from the log on open
	st.Close()
	st = reopen(Options{})
	check("after a reindex")
	if _, err := st.RemoveNote(ctx, "s", wrong.ID); err != nil {
		t.Fatal(err)
	}
	if got := hitKeys(searchAll(t, st, "label:wrong")); got != "" {
		t.Errorf("after removal label:wrong found %q", got)
	}
}

// testNotesSurviveAnExtendingImport: an imported dsh log with a label,
// imported again from its grown file, is extended and keeps the label;
// the stored log stays equal to the file (notes never enter it).
func testNotesSurviveAnExtendingImport(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	logs, _, err := dsh.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl"), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l := logs[0]
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, l.Header, l.Events[:38]); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(t.TempDir(), "prefix.jsonl")
	if err := os.WriteFile(prefix, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	MustImport(t, st, prefix)
	var call string
	for _, ev := range l.Events[:38] {
		if ev.Type == core.EventToolCall {
			var d struct{ CallID string }
			if json.Unmarshal(ev.Data, &d) == nil && d.CallID != "" {
				call = d.CallID
				break
			}
		}
	}
	if call == "" {
		t.Fatal("the fixture has no tool call")
	}
	n := mustPut(t, st, label(l.Header.ID, call, `{"label":"wrong"}`))
	res := MustImport(t, st, filepath.Join(Fixtures, "basic/session.jsonl"))
	if res[0].Outcome != store.ImportExtended {
		t.Fatalf("import of the grown file = %+v, want extended", res[0])
	}
	if got := mustNotes(t, st, l.Header.ID, notes.Query{}); noteIDs(got) != n.ID {
		t.Errorf("after the extending import Notes = %v, want the label", noteIDs(got))
	}
	var out bytes.Buffer
	if err := st.Export(ctx, l.Header.ID, &out); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte(`"wrong"`)) || bytes.Contains(out.Bytes(), []byte(n.ID)) {
		t.Errorf("the exported log carries the label")
	}
}
