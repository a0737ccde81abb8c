package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"prism/backend"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/web"
)

// TestShareFamily_grandchildNoteReachesOpenLink: a grandchild linked (its
// link note is on the child, which does not commit again) while the
// parent's link is open is named on the link from then on: when the
// parent's log later names it, the open stream and the page show
// "child-2", never its id.
func TestShareFamily_grandchildNoteReachesOpenLink(t *testing.T) {
	const kid1, grand = "zqkid-1a2b3c4d", "zqgrand-9c0d1e2f"
	e, _ := shareEnv(t, withNotes)
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`)
	e.session(t, "p", pb.Events)
	kb := coretest.NewBuilder(t0 + 100)
	kb.TurnStart().StepStart().User("Count.").
		Call("g1", "subagent", `{"description":"deeper","prompt":"Deeper.","background":true}`)
	linkChildOf(t, e, "p", "s1", 3, kid1, 1, false, kb.Events)

	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)
	st := e.stream(t, l.Stream(-1))
	st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), `data-child="child-1"`) })

	// The grandchild is linked on kid1; its note is committed (and told
	// to the live path) before the parent's next event.
	linkChildOf(t, e, kid1, "g1", 4, grand, 2, true, coretest.NewBuilder(t0+200).TurnStart().StepStart().User("Deeper.").Events)
	n := len(pb.Events)
	pb.Result("s1", "done; my helper was "+grand+".", false, nil, nil)
	e.append(t, "p", pb.Events[n:]...)
	got := ""
	st.until(t, func(ev sseEvent) bool {
		d := strings.Join(ev.Data, "\n")
		got += d
		return strings.Contains(d, "my helper was")
	})
	if i := strings.Index(got, grand); i >= 0 {
		t.Errorf("the stream shows the grandchild's id: %q", got[max(0, i-100):min(len(got), i+40)])
	}
	if !strings.Contains(got, "my helper was child-2") {
		t.Errorf("the stream does not name the grandchild child-2: %q", got)
	}
	_, page := e.get(t, l.Page())
	if strings.Contains(page, grand) || !strings.Contains(page, "my helper was child-2") {
		t.Errorf("the page shows the grandchild's id, or not its name (child-2)")
	}
}

// TestShareFamily_readOncePerChange: a link made with its children reads
// its family's link notes once, not on each request — its page (a 304
// included), JSONL and export — nor on a child's commit its open hub
// takes, and again, once, when a member's link
// notes change: a new grandchild (linked on the child) is named at once
// on the page, the JSONL and the validator moves; a removed link note
// keeps its name (removed notes count, familyNames).
func TestShareFamily_readOncePerChange(t *testing.T) {
	const kid1, grand = "zqkid-1a2b3c4d", "zqgrand-9c0d1e2f"
	var rc *readCounter
	e, _ := shareEnv(t, func(d *web.Deps) {
		withNotes(d)
		rc = &readCounter{Source: d.Sessions.(backend.Source), notes: d.Notes, n: map[string]int{}}
		d.Sessions, d.Notes = rc, rc
	})
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").
		Call("s1", "subagent", `{"description":"count","prompt":"Count."}`).
		Result("s1", "done; my helper was "+grand+".", false, nil, nil)
	e.session(t, "p", pb.Events)
	kb := coretest.NewBuilder(t0 + 100)
	kb.TurnStart().StepStart().User("Count.").
		Call("g1", "subagent", `{"description":"deeper","prompt":"Deeper.","background":true}`)
	linkChildOf(t, e, "p", "s1", 3, kid1, 1, false, kb.Events)
	l, _ := shareLinksOf2(t, e, "p", `{"children":true}`)

	reads := func() int { return rc.get("notes:" + kid1) }
	res, page := e.get(t, l.Page())
	tag := res.Header.Get("ETag")
	if !strings.Contains(page, "my helper was "+grand) {
		t.Fatalf("before it is linked, the grandchild is not named on the page")
	}
	before := reads()
	for range 3 {
		if res, _ := e.get(t, l.Page(), "If-None-Match", tag); res.StatusCode != http.StatusNotModified {
			t.Fatalf("a reload holding the validator: %d, want 304", res.StatusCode)
		}
		e.get(t, l.Page())
		e.get(t, l.Events())
		e.get(t, l.ExportHTML())
	}
	// The child's commits reach the open link's hub, which does not read
	// the family again either.
	st := e.stream(t, l.Stream(-1))
	st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), `data-child="child-1"`) })
	n := len(kb.Events)
	kb.Call("k2", "note", `{"title":"zqmarker"}`)
	e.append(t, kid1, kb.Events[n:]...)
	st.until(t, func(ev sseEvent) bool { return strings.Contains(strings.Join(ev.Data, "\n"), "zqmarker") })
	st.cancel()
	if n := reads() - before; n != 0 {
		t.Errorf("the child's link notes were read %d times by 12 requests and a child's commit on an open link; want none (the family is kept)", n)
	}
	res, _ = e.get(t, l.Page())
	tag = res.Header.Get("ETag")

	linkChildOf(t, e, kid1, "g1", 4, grand, 2, true, coretest.NewBuilder(t0+200).TurnStart().StepStart().User("Deeper.").Events)
	before = reads()
	res, page = e.get(t, l.Page(), "If-None-Match", tag)
	if res.StatusCode != http.StatusOK || strings.Contains(page, grand) || !strings.Contains(page, "my helper was child-2") {
		t.Errorf("after the grandchild's link note: %d, page names its id %v; want 200 naming it child-2", res.StatusCode, strings.Contains(page, grand))
	}
	if _, jsonl := e.get(t, l.Events()); strings.Contains(jsonl, grand) || !strings.Contains(jsonl, "my helper was child-2") {
		t.Errorf("after the grandchild's link note, the JSONL names its id, or not child-2")
	}
	if n := reads() - before; n != 1 {
		t.Errorf("the child's link notes were read %d times after they changed; want once", n)
	}

	ns, err := rc.Notes(context.Background(), kid1, notes.Query{Kind: notes.KindLink})
	if err != nil || len(ns) != 1 {
		t.Fatalf("link notes of %s: %v %v", kid1, ns, err)
	}
	if _, err := rc.RemoveNote(context.Background(), kid1, ns[0].ID); err != nil {
		t.Fatal(err)
	}
	before = reads()
	for range 2 {
		if _, page = e.get(t, l.Page()); strings.Contains(page, grand) || !strings.Contains(page, "my helper was child-2") {
			t.Errorf("after its link note was removed, the page names the grandchild's id, or not child-2")
		}
	}
	if n := reads() - before; n != 1 {
		t.Errorf("the child's link notes were read %d times after one was removed; want once", n)
	}
}
