package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core/coretest"
	"prism/core/notes"
)

// TestShareForkReplayedNamesNoSource: a fork's link says which calls were
// replayed ("replayed", no link) but never from which session: not on its
// page (redacted or not), at an event, on the call's page, in its export
// or JSONL, nor on its live stream; the owner's page still names and
// links the source.
func TestShareForkReplayedNamesNoSource(t *testing.T) {
	const src = "zqsrc-12345678"
	e, _ := shareEnv(t, withNotes)
	sb := coretest.NewBuilder(t0)
	sb.TurnStart().StepStart().User("go").Call("c1", "note", `{"title":"x"}`).Result("c1", "ok", false, nil, nil).StepEnd()
	e.session(t, src, sb.Events)
	fb := coretest.NewBuilder(t0)
	fb.TurnStart().StepStart().User("go").Call("c1", "note", `{"title":"x"}`).Result("c1", "ok", false, nil, nil).StepEnd()
	e.session(t, "fk", fb.Events)
	seq := int64(3)
	if _, err := e.store.PutNote(context.Background(), notes.Input{Session: "fk", Kind: notes.KindReplayed, CallID: "c1", AtSeq: &seq,
		Data: []byte(`{"sourceSession":"` + src + `","sourceSeq":4}`)}); err != nil {
		t.Fatal(err)
	}
	if _, owner := e.get(t, "/sessions/fk"); !strings.Contains(owner, "replayed from "+src[:8]+" #4") || !strings.Contains(owner, "/sessions/"+src+"?event=4") {
		t.Errorf("the owner's page does not name the source")
	}
	for _, body := range []string{`{}`, `{"redact":false}`} {
		l, _ := shareLinksOf2(t, e, "fk", body)
		_, page := e.get(t, l.Page())
		d, err := goquery.NewDocumentFromReader(strings.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		pill := d.Find(`[data-testid="replayed"]`)
		if pill.Length() != 1 || strings.TrimSpace(pill.Text()) != "replayed" || pill.Is("a") {
			t.Errorf("%s: the replayed mark is %d× %q (a link: %v); want one plain \"replayed\"", body, pill.Length(), pill.Text(), pill.Is("a"))
		}
		// A page that stood at an event goes live: its window is sent
		// again (openLive).
		st := e.stream(t, l.Stream(-1)+"&datastar="+url.QueryEscape(`{"ttMode":"at"}`))
		frames := ""
		for _, ev := range st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), `data-testid="replayed"`) }) {
			frames += strings.Join(ev.Data, "\n")
		}
		for name, got := range map[string]string{"page": page, "stream": frames,
			"page at 4": bodyOf(t, e, l.Page()+"?at=4"), "call": bodyOf(t, e, l.Call("c1", "")),
			"export": bodyOf(t, e, l.ExportHTML()), "JSONL": bodyOf(t, e, l.Events())} {
			if i := strings.Index(got, src); i >= 0 {
				t.Errorf("%s: the link's %s names the fork's source: %q", body, name, got[max(0, i-200):min(len(got), i+40)])
			}
			if strings.Contains(got, "/sessions/") {
				t.Errorf("%s: the link's %s links the owner's pages", body, name)
			}
		}
	}
}

// bodyOf returns the body of GET path.
func bodyOf(t *testing.T, e *env, path string) string {
	t.Helper()
	_, body := e.get(t, path)
	return body
}
