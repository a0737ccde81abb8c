package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/core/redact"
	"prism/views"
	"prism/web"
)

// linkChildOf stores session id as a subagent of parent spawned by call
// (at seq atSeq of the parent), with events, and its link note.
func linkChildOf(t *testing.T, e *env, parent, call string, atSeq int64, id string, depth int64, background bool, events []core.Event) {
	t.Helper()
	ctx := context.Background()
	if err := e.store.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: t0 + 100, Cwd: "/work", ParentSession: parent,
		Origin: core.OriginSubagent, DelegationDepth: &depth}); err != nil {
		t.Fatal(err)
	}
	e.append(t, id, events...)
	in, err := notes.Link(parent, call, atSeq, notes.LinkData{Child: id, Background: background})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutNote(ctx, in); err != nil {
		t.Fatal(err)
	}
}

// sharePaths returns the files a link's page links on the link, with its
// JSONL and saved page.
func sharePaths(l views.Links, page string) []string {
	paths := []string{l.Events(), l.ExportHTML()}
	for _, m := range regexp.MustCompile(`(?:href|action|src)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if strings.HasPrefix(m[1], l.Page()+"/") {
			paths = append(paths, strings.ReplaceAll(m[1], "&amp;", "&"))
		}
	}
	return paths
}

// streamed reads the stream of l from the start until a frame holds
// needle, and returns every frame's data read.
func streamed(t *testing.T, e *env, l views.Links, needle string) string {
	t.Helper()
	var all []string
	for _, ev := range e.stream(t, l.Stream(-1)).until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), needle) }) {
		all = append(all, ev.Data...)
	}
	return strings.Join(all, "\n")
}

// TestShareChildren_grandchildrenNamed: a link made with its children
// names a child's own child too — the grandchild its nested child's
// subagent call spawned — numbered after the children (child-1, child-2,
// then child-3), the same on the page, the saved page and the stream, and
// never shows the grandchild's id in any byte it serves.
func TestShareChildren_grandchildrenNamed(t *testing.T) {
	const kid1, kid2, grand = "zqkid-1a2b3c4d", "zqkid-5e6f7a8b", "zqgrand-9c0d1e2f"
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`).
		Call("s2", "subagent", `{"description":"watch","prompt":"Watch.","background":true}`).
		Result("s2", "Started subagent "+kid2+" in the background.", false, map[string]any{"child": kid2, "background": true}, nil)
	e.session(t, "p", pb.Events)

	kb := coretest.NewBuilder(t0 + 100)
	kb.TurnStart().StepStart().User("Count.").
		Call("g1", "subagent", `{"description":"deeper","prompt":"Deeper.","background":true}`).
		Result("g1", "Started subagent "+grand+" in the background.", false, map[string]any{"child": grand, "background": true}, nil)
	linkChildOf(t, e, "p", "s1", 4, kid1, 1, false, kb.Events)
	linkChildOf(t, e, "p", "s2", 5, kid2, 1, true, coretest.NewBuilder(t0+100).TurnStart().StepStart().User("Watch.").Events)
	gb := coretest.NewBuilder(t0 + 200)
	gb.TurnStart().StepStart().User("Deeper.")
	linkChildOf(t, e, kid1, "g1", 4, grand, 2, true, gb.Events)

	leaks := func(what, got string) {
		t.Helper()
		for _, id := range []string{kid1, kid2, grand} {
			if i := strings.Index(got, id); i >= 0 {
				t.Errorf("%s shows id %s: %q", what, id, got[max(0, i-120):min(len(got), i+60)])
			}
		}
	}
	for _, body := range []string{`{"children":true}`, `{"children":true,"redact":false}`} {
		l, _ := shareLinksOf2(t, e, "p", body)
		first := streamed(t, e, l, `data-call-id="s2"`)
		_, page := e.get(t, l.Page())
		_, saved := e.get(t, l.ExportHTML())
		for what, got := range map[string]string{"the stream": first, "the page": page, "the saved page": saved} {
			leaks(body+": "+what, got)
			if !strings.Contains(got, "Started subagent child-3 in the background.") || !strings.Contains(got, "Started subagent child-2 in the background.") {
				t.Errorf("%s: %s does not name the background child child-2 and the grandchild child-3", body, what)
			}
		}
		for _, path := range sharePaths(l, page) {
			_, got := e.get(t, path)
			leaks(body+": GET "+path, got)
		}
	}
}

// TestShareChildren_redactedIDsOneName: when a redaction rule matches the
// children's ids, the link still names each child by the one name every
// path gives it — the page nests child-1 in the first spawning call's card
// and child-2 in the second's, and the JSONL and the stream name the
// second child child-2 where its spawning call's result names it — since
// every path names the children from the stored link notes, before it
// redacts.
func TestShareChildren_redactedIDsOneName(t *testing.T) {
	const kid1, kid2 = "zqkid-1a2b3c4d", "zqkid-5e6f7a8b"
	e, _ := shareEnv(t, func(d *web.Deps) {
		withNotes(d)
		r, err := redact.New(`zqkid-[0-9a-f]{8}`)
		if err != nil {
			t.Fatal(err)
		}
		d.Redactor = r
	})
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`).
		Call("s2", "subagent", `{"description":"watch","prompt":"Watch.","background":true}`).
		Result("s2", "Started subagent "+kid2+" in the background.", false, map[string]any{"child": kid2, "background": true}, nil)
	e.session(t, "p", pb.Events)
	k1 := coretest.NewBuilder(t0 + 100)
	k1.TurnStart().StepStart().User("Count.").Call("kc1", "note", `{"title":"zqfirst"}`)
	linkChildOf(t, e, "p", "s1", 4, kid1, 1, false, k1.Events)
	k2 := coretest.NewBuilder(t0 + 100)
	k2.TurnStart().StepStart().User("Watch.").Call("kc2", "note", `{"title":"zqsecond"}`)
	linkChildOf(t, e, "p", "s2", 5, kid2, 1, true, k2.Events)

	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)
	first := streamed(t, e, l, `data-call-id="s2"`)
	_, page := e.get(t, l.Page())
	for what, got := range map[string]string{"the page": page, "the stream": first} {
		d := doc(t, got)
		for call, want := range map[string]struct{ name, title string }{"s1": {"child-1", "zqfirst"}, "s2": {"child-2", "zqsecond"}} {
			child := d.Find(`[data-call-id="` + call + `"] [data-testid="child"]`)
			if name, _ := child.Attr("data-child"); name != want.name || !strings.Contains(child.Text(), want.title) {
				t.Errorf("%s: the card of %s nests %q (%d nests, its cards found: %v), want %s with its card %q", what, call, name, child.Length(),
					strings.Contains(child.Text(), want.title), want.name, want.title)
			}
		}
		if !strings.Contains(got, "Started subagent child-2 in the background.") {
			t.Errorf("%s does not name the second child child-2 in its spawning call's output", what)
		}
	}
	_, jsonl := e.get(t, l.Events())
	if !strings.Contains(jsonl, `"child":"child-2"`) || !strings.Contains(jsonl, "Started subagent child-2 in the background.") {
		t.Errorf("the JSONL does not name the second child child-2 where the page does: %s", jsonl)
	}
	for what, got := range map[string]string{"the page": page, "the stream": first, "the JSONL": jsonl} {
		for _, id := range []string{kid1, kid2} {
			if strings.Contains(got, id) {
				t.Errorf("%s shows child id %s", what, id)
			}
		}
	}
}

// TestShareChildren_grandchildRenamedLive: on an open link, a grandchild
// named child-2 becomes child-3 when a second child of the parent is
// linked (children are numbered before grandchildren): the stream sends
// the nested child's card with the new name, and no frame ever shows the
// grandchild's id.
func TestShareChildren_grandchildRenamedLive(t *testing.T) {
	const kid1, kid2, grand = "zqkid-1a2b3c4d", "zqkid-5e6f7a8b", "zqgrand-9c0d1e2f"
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`)
	e.session(t, "p", pb.Events)
	kb := coretest.NewBuilder(t0 + 100)
	kb.TurnStart().StepStart().User("Count.").
		Call("g1", "subagent", `{"description":"deeper","prompt":"Deeper.","background":true}`).
		Result("g1", "Started subagent "+grand+" in the background.", false, map[string]any{"child": grand, "background": true}, nil)
	linkChildOf(t, e, "p", "s1", 3, kid1, 1, false, kb.Events)
	linkChildOf(t, e, kid1, "g1", 4, grand, 2, true, coretest.NewBuilder(t0+200).TurnStart().StepStart().User("Deeper.").Events)

	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)
	st := e.stream(t, l.Stream(-1))
	check := func(ev sseEvent) string {
		d := strings.Join(ev.Data, "\n")
		if strings.Contains(d, grand) || strings.Contains(d, kid1) || strings.Contains(d, kid2) {
			t.Fatalf("a frame shows an id: %s", d)
		}
		return d
	}
	st.until(t, func(ev sseEvent) bool {
		return strings.Contains(check(ev), "Started subagent child-2 in the background.")
	})

	n := len(pb.Events)
	pb.Call("s2", "subagent", `{"description":"watch","prompt":"Watch."}`)
	e.append(t, "p", pb.Events[n:]...)
	linkChildOf(t, e, "p", "s2", pb.Events[len(pb.Events)-1].Seq, kid2, 1, false, coretest.NewBuilder(t0+300).TurnStart().StepStart().User("Watch.").Events)
	st.until(t, func(ev sseEvent) bool {
		return strings.Contains(check(ev), "Started subagent child-3 in the background.")
	})
	if _, page := e.get(t, l.Page()); !strings.Contains(page, "Started subagent child-3 in the background.") || !strings.Contains(page, `data-child="child-2"`) {
		t.Errorf("after the second child, the page does not name the grandchild child-3 and the second child child-2")
	}
}

// TestShareChildren_validatorFollowsChildren: a link made with its children
// shows their cards, so a child's new event changes what the link serves
// even while its parent's log stands still — a reload holding the old
// validator gets the new page (200, a new ETag), never a 304 that keeps the
// stale nested cards; without a change it is still a 304.
func TestShareChildren_validatorFollowsChildren(t *testing.T) {
	const kid = "zqkid-1a2b3c4d"
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"watch","prompt":"Watch.","background":true}`).
		Result("s1", "Started subagent "+kid+" in the background.", false, map[string]any{"child": kid, "background": true}, nil)
	e.session(t, "p", pb.Events)
	kb := coretest.NewBuilder(t0 + 100)
	kb.TurnStart().StepStart().User("Watch.").Call("kc1", "note", `{"title":"zqfirst"}`)
	linkChildOf(t, e, "p", "s1", 4, kid, 1, true, kb.Events)

	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)
	for _, path := range []string{l.Page(), l.ExportHTML()} {
		res, _ := e.get(t, path)
		tag := res.Header.Get("ETag")
		if res, _ := e.get(t, path, "If-None-Match", tag); res.StatusCode != http.StatusNotModified {
			t.Fatalf("GET %s with its ETag before any change: %d, want 304", path, res.StatusCode)
		}
	}
	res, _ := e.get(t, l.Page())
	pageTag := res.Header.Get("ETag")
	res, _ = e.get(t, l.ExportHTML())
	savedTag := res.Header.Get("ETag")
	kb.Result("kc1", "noted zqsecond", false, nil, nil)
	e.append(t, kid, kb.Events[len(kb.Events)-1])
	for path, tag := range map[string]string{l.Page(): pageTag, l.ExportHTML(): savedTag} {
		res, body := e.get(t, path, "If-None-Match", tag)
		if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == tag {
			t.Errorf("GET %s after its child's new event, with the old ETag: %d, ETag %q (was %q); want 200 and a new one", path, res.StatusCode, res.Header.Get("ETag"), tag)
		}
		if res.StatusCode == http.StatusOK && !strings.Contains(body, "noted zqsecond") {
			t.Errorf("GET %s after its child's new event does not show it", path)
		}
	}
}

// TestShareChildren_chunkSplitIDNamed: the model repeating a child's id
// in streamed text, the id split across two chunks, shows child-1 and no
// piece of the id on the open stream — the first chunk holds the id's
// start back until the next finishes it —, on the page, and in the
// JSONL's chunk deltas, redacted or not.
func TestShareChildren_chunkSplitIDNamed(t *testing.T) {
	const kid1 = "zqkid-1a2b3c4d"
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count.","background":true}`).
		Result("s1", "Started subagent "+kid1+" in the background.", false, map[string]any{"child": kid1, "background": true}, nil)
	e.session(t, "p", pb.Events)
	linkChildOf(t, e, "p", "s1", 4, kid1, 1, true, coretest.NewBuilder(t0+100).TurnStart().StepStart().User("Count.").Events)
	var links []views.Links
	var streams []*sseClient
	for _, body := range []string{`{"children":true}`, `{"children":true,"redact":false}`} {
		l, _ := shareLinksOf2(t, e, "p", body)
		st := e.stream(t, l.Stream(-1))
		st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), `data-child="child-1"`) })
		links, streams = append(links, l), append(streams, st)
	}
	n := len(pb.Events)
	pb.StepEnd().StepStart().Chunks("Subagent zqkid-1a", "2b3c4d is counting")
	e.append(t, "p", pb.Events[n:n+3]...) // the step's end, its start and the block's start
	e.append(t, "p", pb.Events[n+3])      // "Subagent zqkid-1a": the stream is open
	e.append(t, "p", pb.Events[n+4])      // "2b3c4d is counting"
	// The link that does not redact streams the text before its message.
	got := []string{"", ""}
	streams[1].until(t, func(ev sseEvent) bool {
		d := strings.Join(ev.Data, "\n")
		got[1] += d
		return strings.Contains(d, "is counting")
	})
	m := len(pb.Events)
	pb.Assistant("Subagent " + kid1 + " is counting").StepEnd()
	e.append(t, "p", pb.Events[m:]...)
	for i, l := range links {
		streams[i].until(t, func(ev sseEvent) bool {
			d := strings.Join(ev.Data, "\n")
			got[i] += d
			return strings.Contains(d, "Subagent child-1 is counting")
		})
		_, page := e.get(t, l.Page())
		_, jsonl := e.get(t, l.Events())
		for what, s := range map[string]string{"the stream": got[i], "the page": page, "the JSONL": jsonl} {
			if j := strings.Index(s, "zqkid"); j >= 0 {
				t.Errorf("link %d: %s shows a piece of the child's id: %q", i, what, s[max(0, j-120):min(len(s), j+40)])
			}
		}
		if !strings.Contains(jsonl, `"text":"Subagent "}`) || !strings.Contains(jsonl, `"text":"child-1 is counting"}`) {
			t.Errorf("link %d: the JSONL's deltas are not cut back as they came (\"Subagent \", \"child-1 is counting\"): %s", i, jsonl)
		}
	}
}

// TestShareChildren_spawnBeforeLinkNoteMasked: the spawning call's result
// stored before the child's link note (a watcher's order for a Codex
// thread or a background Claude Code agent) streams child-? for the child,
// never its id, on a link with its children; once the note is stored the
// open stream names it child-2.
func TestShareChildren_spawnBeforeLinkNoteMasked(t *testing.T) {
	const kid1, kid2 = "zqkid-1a2b3c4d", "zqkid-5e6f7a8b"
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`)
	e.session(t, "p", pb.Events)
	linkChildOf(t, e, "p", "s1", 3, kid1, 1, false, coretest.NewBuilder(t0+100).TurnStart().StepStart().User("Count.").Events)
	bodies := []string{`{"children":true}`, `{"children":true,"redact":false}`}
	var links []views.Links
	var streams []*sseClient
	for _, body := range bodies {
		l, _ := shareLinksOf2(t, e, "p", body)
		st := e.stream(t, l.Stream(-1))
		st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), `data-child="child-1"`) })
		links, streams = append(links, l), append(streams, st)
	}
	n := len(pb.Events)
	pb.Call("s2", "subagent", `{"description":"watch","prompt":"Watch.","background":true}`).
		Result("s2", "Started subagent "+kid2+" in the background.", false, map[string]any{"child": kid2, "background": true}, nil)
	e.append(t, "p", pb.Events[n:]...)
	for i, l := range links {
		got := ""
		streams[i].until(t, func(ev sseEvent) bool {
			d := strings.Join(ev.Data, "\n")
			got += d
			return strings.Contains(d, "in the background.")
		})
		if !strings.Contains(got, "Started subagent child-?") {
			t.Errorf("%s: the stream does not mask the child with no name yet: %s", bodies[i], got)
		}
		_, page := e.get(t, l.Page())
		_, jsonl := e.get(t, l.Events())
		for what, s := range map[string]string{"the stream": got, "the page": page, "the JSONL": jsonl} {
			if j := strings.Index(s, kid2); j >= 0 {
				t.Errorf("%s: before its link note, %s shows the child's id: %q", bodies[i], what, s[max(0, j-120):min(len(s), j+40)])
			}
		}
	}
	linkChildOf(t, e, "p", "s2", pb.Events[n].Seq, kid2, 1, true, coretest.NewBuilder(t0+300).TurnStart().StepStart().User("Watch.").Events)
	for i := range links {
		got := ""
		streams[i].until(t, func(ev sseEvent) bool {
			d := strings.Join(ev.Data, "\n")
			got += d
			return strings.Contains(d, "Started subagent child-2")
		})
		if strings.Contains(got, kid2) {
			t.Errorf("%s: after its link note, the stream shows the child's id", bodies[i])
		}
	}
}
