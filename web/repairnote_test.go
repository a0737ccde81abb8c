package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/views"
)

// TestRepairNote_turnDividerSaysWhy: crash repair's turn/end is plain dsh
// ({kind: interrupted}); why a running prism closed the turn is a "repair"
// note on that turn/end. An open page gets the divider re-rendered with the
// reason as soon as the note is written, a page loaded afterwards shows it,
// and the log the API exports still has no reason in it.
func TestRepairNote_turnDividerSaysWhy(t *testing.T) {
	e := notesEnv(t)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`)
	e.session(t, "r", b.Events)
	closers := core.InterruptedTurnClosers(b.Events)
	end := closers[len(closers)-1]
	st := e.stream(t, views.SessionStreamURL("r", end.Seq-int64(len(closers))))
	e.append(t, "r", closers...)
	st.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-status="stopped"`) })

	const why = "the node running it stopped or lost its database connection"
	if _, err := e.store.PutNote(context.Background(), notes.Repair("r", end.Seq, core.CancelCause{Kind: core.InterruptNodeLost, Reason: why})); err != nil {
		t.Fatal(err)
	}
	evs := st.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), "closed by crash repair: "+why) })
	if ev := evs[len(evs)-1]; !strings.Contains(ev.Elements(), `data-testid="turn"`) || ev.ID != "" {
		t.Errorf("the reason came in %+v, want the turn's divider in a frame that moves no cursor", ev)
	}
	if _, page := e.get(t, "/sessions/r"); !strings.Contains(page, "closed by crash repair: "+why) {
		t.Errorf("the page does not say why repair closed the turn")
	}
	if _, log := e.get(t, views.ExportURL("r")); strings.Contains(log, core.InterruptNodeLost) || strings.Contains(log, why) {
		t.Errorf("the exported log carries the repair's reason:\n%s", log)
	}
}

// TestRepairNote_onShareLinks: why crash repair closed a turn, and that
// a fork's call was replayed, are shown on a share link's page even
// without the labels box, while the link still shows no label.
func TestRepairNote_onShareLinks(t *testing.T) {
	e, _ := shareEnv(t, withNotes)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`)
	closers := core.InterruptedTurnClosers(b.Events)
	e.session(t, "s", append(b.Events, closers...))
	const why = "the store was unreachable"
	end := closers[len(closers)-1].Seq
	if _, err := e.store.PutNote(context.Background(), notes.Repair("s", end, core.CancelCause{Kind: core.InterruptStoreUnreachable, Reason: why})); err != nil {
		t.Fatal(err)
	}
	if res, body := e.post(t, "/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"zqhidden"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	if _, err := e.store.PutNote(context.Background(), notes.Input{Session: "s", Kind: notes.KindReplayed, CallID: "c1", AtSeq: &end,
		Data: []byte(`{"sourceSession":"zqsource","sourceSeq":3}`)}); err != nil {
		t.Fatal(err)
	}
	l, _ := shareLinksOf(t, e, `{}`)
	_, page := e.get(t, l.Page())
	if !strings.Contains(page, "closed by crash repair: "+why) {
		t.Errorf("the share's page does not say why repair closed the turn")
	}
	if !strings.Contains(page, `data-testid="replayed"`) {
		t.Errorf("the share's page does not say the call was replayed")
	}
	if strings.Contains(page, "zqhidden") {
		t.Errorf("the share's page (no labels box) shows a label")
	}
}
