package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/web"
)

// busyNotes answers the notes of one session as SQLite's store does when
// the database is locked: a 503 whose message names the session.
type busyNotes struct {
	web.NoteStore
	busy string
}

func (b busyNotes) Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error) {
	if session == b.busy {
		return nil, &core.Error{Name: "Error", Code: core.CodeUnavailable, Message: "read notes of session " + session + ": database is busy: database is locked"}
	}
	return b.NoteStore.Notes(ctx, session, q)
}

// TestShareStoreBusyNamesNoChild: a link made with its children whose
// child's notes cannot be read for a while (a busy store, whose error
// names the child) answers every read — its page, JSONL and export, as
// HTML and as JSON, its live stream and its playback — with a generic
// "temporarily unavailable, retry" (503 and a Retry-After on a request),
// never the error's text; the server's log keeps that text whole.
func TestShareStoreBusyNamesNoChild(t *testing.T) {
	const kid1 = "zqkid-1a2b3c4d"
	var logs lockedBuffer
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Notes = busyNotes{NoteStore: d.Sessions.(backend.Source).Store.(web.NoteStore), busy: kid1}
		d.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`)
	e.session(t, "p", pb.Events)
	linkChildOf(t, e, "p", "s1", 3, kid1, 1, false, coretest.NewBuilder(t0+100).TurnStart().StepStart().User("Count.").Events)
	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)
	for _, p := range []string{l.Page(), l.Events(), l.ExportHTML()} {
		for _, accept := range []string{"text/html", "application/json"} {
			res, body := e.get(t, p, "Accept", accept)
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
				t.Errorf("GET %s (Accept %s): status %d, Retry-After %q; want 503 and a Retry-After", p, accept, res.StatusCode, res.Header.Get("Retry-After"))
			}
			if strings.Contains(body, kid1) || !strings.Contains(body, "temporarily unavailable, retry") {
				t.Errorf("GET %s (Accept %s): want the generic message and no child id, got %s", p, accept, body[:min(len(body), 600)])
			}
		}
	}
	for _, p := range []string{l.Stream(-1), l.Stream(-1) + "&speed=50"} {
		st := e.stream(t, p)
		got := st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), "Reload to retry") })
		last := strings.Join(got[len(got)-1].Data, "\n")
		if strings.Contains(last, kid1) || !strings.Contains(last, "temporarily unavailable, retry") {
			t.Errorf("stream %s: want the generic message and no child id, got %s", p, last)
		}
	}
	if !strings.Contains(logs.String(), "read notes of session "+kid1+": database is busy") {
		t.Errorf("the server's log lost the error's text:\n%s", logs.String())
	}
}
