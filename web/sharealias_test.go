package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/views"
)

// TestShareChildren_namesNotIDs: a link made with its children names them
// child-1, child-2 (in the order their link notes were made) and never by
// their session ids: not in any byte of its page, its saved page, its
// JSONL, any file the page links on the link (a call's page, its meta and
// content), nor its live stream as a child and the spawning calls commit —
// whether the link redacts or not. The ids are where the subagent tool
// puts them: the result's meta, a background call's text, the link notes.
func TestShareChildren_namesNotIDs(t *testing.T) {
	const fg, bg = "zqkid-4f1c9a7e", "zqbg-8d2e6b1f"
	ctx := context.Background()
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count files","prompt":"Count."}`).
		Call("s2", "subagent", `{"description":"watch","prompt":"Watch.","background":true}`).
		Result("s2", "Started subagent "+bg+" in the background.", false, map[string]any{"child": bg, "background": true}, nil)
	e.session(t, "p", pb.Events)
	one := int64(1)
	kids := map[string]*coretest.Builder{}
	for i, id := range []string{fg, bg} {
		if err := e.store.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: t0 + 100, Cwd: "/work", ParentSession: "p",
			Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
			t.Fatal(err)
		}
		kb := coretest.NewBuilder(t0 + 100)
		kb.TurnStart().StepStart().User("Go.").Call("kc1", "note", `{"title":"files"}`)
		e.append(t, id, kb.Events...)
		kids[id] = kb
		call := []string{"s1", "s2"}[i]
		in, err := notes.Link("p", call, int64(4+i), notes.LinkData{Child: id, Background: i == 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.PutNote(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	leaks := func(what, got string) {
		t.Helper()
		for _, id := range []string{fg, bg} {
			if i := strings.Index(got, id); i >= 0 {
				t.Errorf("%s shows child id %s: %q", what, id, got[max(0, i-120):min(len(got), i+60)])
			}
		}
	}
	bodies := []string{`{"children":true}`, `{"children":true,"redact":false}`}
	var links []views.Links
	var streams []*sseClient
	for _, body := range bodies {
		l, _ := shareLinksOf2(t, e, "p", body)
		st := e.stream(t, l.Stream(-1))
		leaks(body+": the stream's first frame", strings.Join(st.next(t).Data, "\n"))
		links, streams = append(links, l), append(streams, st)
	}

	// The foreground child commits; then its spawning call's result.
	kb := kids[fg]
	n := len(kb.Events)
	kb.Result("kc1", "two files", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	e.append(t, fg, kb.Events[n:]...)
	n = len(pb.Events)
	pb.Result("s1", "two files", false, map[string]any{"child": fg, "background": false}, nil)
	e.append(t, "p", pb.Events[n:]...)

	for i, body := range bodies {
		l := links[i]
		for _, ev := range streams[i].until(t, func(ev sseEvent) bool {
			return strings.Contains(ev.Elements(), `data-call-id="s1"`) && strings.Contains(ev.Elements(), `data-state="ok"`)
		}) {
			leaks(body+": a stream frame", strings.Join(ev.Data, "\n"))
		}
		_, page := e.get(t, l.Page())
		leaks(body+": the page", page)
		for _, name := range []string{"child-1", "child-2"} {
			if !strings.Contains(page, `data-child="`+name+`"`) {
				t.Errorf("%s: the page does not nest %s", body, name)
			}
		}
		paths := []string{l.Events(), l.ExportHTML()}
		base := l.Page()
		for _, m := range regexp.MustCompile(`(?:href|action|src)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			if strings.HasPrefix(m[1], base+"/") {
				paths = append(paths, strings.ReplaceAll(m[1], "&amp;", "&"))
			}
		}
		if len(paths) < 4 {
			t.Errorf("%s: the page links %d files on the link, want the calls' pages and files too", body, len(paths)-2)
		}
		for _, path := range paths {
			_, got := e.get(t, path)
			leaks(body+": GET "+path, got)
		}
	}
}

// TestShareChildren_namedWhenTheLinkComesLate: a child whose link note is
// made after the events that name it (as an import's inferred links are)
// gets its name on an open link too: the link's live view is sent again
// with the name in place of the id.
func TestShareChildren_namedWhenTheLinkComesLate(t *testing.T) {
	const kid = "zqlate-9a8b7c6d"
	ctx := context.Background()
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"watch","prompt":"Watch.","background":true}`).
		Result("s1", "Started subagent "+kid+" in the background.", false, map[string]any{"child": kid, "background": true}, nil)
	e.session(t, "p", pb.Events)
	one := int64(1)
	if err := e.store.CreateSession(ctx, core.SessionHeader{ID: kid, CreatedAt: t0 + 100, Cwd: "/work", ParentSession: "p",
		Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
		t.Fatal(err)
	}
	kb := coretest.NewBuilder(t0 + 100)
	kb.TurnStart().StepStart().User("Go.")
	e.append(t, kid, kb.Events...)
	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)
	st := e.stream(t, l.Stream(-1))
	st.next(t)
	in, err := notes.Link("p", "s1", 4, notes.LinkData{Child: kid, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutNote(ctx, in); err != nil {
		t.Fatal(err)
	}
	evs := st.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-child="child-1"`) })
	if last := strings.Join(evs[len(evs)-1].Data, "\n"); strings.Contains(last, kid) {
		t.Errorf("the frame that names the child child-1 still shows its id")
	}
	if _, page := e.get(t, l.Page()); strings.Contains(page, kid) || !strings.Contains(page, `data-child="child-1"`) {
		t.Errorf("after the late link note the page shows the child's id, or does not nest it as child-1")
	}
}
