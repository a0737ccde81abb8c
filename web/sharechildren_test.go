package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
)

// TestShareChildren_onlyWithTheBox: a link of a parent made without
// {"children": true} carries no trace of its child (page, JSONL, saved
// page, live stream, even as the child commits); a link made with it nests
// the child's cards in the spawning call's card, redacted as the rest and
// without the child's owner URL, live over the link's own stream and, on a
// link scoped at the spawning call, as the child was then; the child's own
// link never reveals its parent.
func TestShareChildren_onlyWithTheBox(t *testing.T) {
	e, _ := shareEnv(t, withNotes)
	kb, callSeq := family(t, e)
	secret := "sk-proj-" + "Zq7mK2pL9xV4bN8cR1tY6wE3uI0oA5sD"
	kb.Result("kc1", "zqkid found "+secret, false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)

	with, made := shareLinksOf2(t, e, "p", `{"children":true}`)
	if made["children"] != true {
		t.Errorf("the created link answers children = %v, want true", made["children"])
	}
	without, _ := shareLinksOf2(t, e, "p", `{}`)
	scoped, _ := shareLinksOf2(t, e, "p", `{"children":true,"upToSeq":`+strconv.FormatInt(callSeq, 10)+`}`)
	var list struct{ Shares []struct{ Children bool } }
	e.apiJSON(t, "GET", "/api/sessions/p/shares", "", &list)
	if len(list.Shares) != 3 || !list.Shares[0].Children || list.Shares[1].Children {
		t.Errorf("listed links = %+v, want the first with children, the second without", list.Shares)
	}
	if _, panel := e.get(t, "/sessions/p"); !strings.Contains(panel, "· with subagents") || !strings.Contains(panel, `data-testid="share-children"`) {
		t.Error("the owner's share panel has no 'include subagents' box or no '· with subagents' row")
	}

	// Live streams of both links, open before the child commits.
	stWith, stWithout := e.stream(t, with.Stream(-1)), e.stream(t, without.Stream(-1))
	stWith.next(t)
	stWithout.next(t)
	e.append(t, "k", kb.Events[len(kb.Events)-3:]...)
	stWith.until(t, func(ev sseEvent) bool {
		el := ev.Elements()
		if strings.Contains(el, secret) {
			t.Fatalf("the stream of the link with children carries the child's secret")
		}
		return strings.Contains(el, `data-call-id="kc1"`) && strings.Contains(el, `data-state="ok"`) && strings.Contains(el, "[redacted:")
	})
	e.append(t, "p", core.Event{Type: "x-test/mark", Seq: callSeq + 1, Time: t0 + 10_000, Data: []byte(`{}`), Ignorable: true})
	for _, ev := range stWithout.until(t, func(ev sseEvent) bool { return ev.ID != "" }) {
		if d := strings.Join(ev.Data, "\n"); strings.Contains(d, "kc1") || strings.Contains(d, "zqkid") || strings.Contains(d, "data-child") {
			t.Errorf("the stream of the link without children carries a trace of the child: %s", d)
		}
	}

	for _, path := range []string{with.Page(), with.ExportHTML()} {
		_, got := e.get(t, path)
		d := doc(t, got)
		child := d.Find(`[data-call-id="s1"] [data-testid="child"]`)
		if child.Length() != 1 || child.Find(`[data-testid="tool-card"][data-call-id="kc1"]`).Length() != 1 {
			t.Errorf("GET %s (with children) does not nest the child's card", path)
		}
		if !strings.Contains(got, "zqkid found") || strings.Contains(got, secret) || !strings.Contains(got, "[redacted:") {
			t.Errorf("GET %s (with children) does not show the child's output redacted", path)
		}
		if strings.Contains(got, `/sessions/k`) || child.Find(`[data-testid="child-open"]`).Length() != 0 {
			t.Errorf("GET %s (with children) reveals the child's owner URL", path)
		}
	}
	for _, path := range []string{without.Page(), without.Events(), without.ExportHTML()} {
		_, got := e.get(t, path)
		for _, w := range []string{"zqkid", "kc1", "data-child", secret} {
			if i := strings.Index(got, w); i >= 0 {
				t.Logf("%s: %q at %q", path, w, got[max(0, i-200):min(len(got), i+100)])
			}
		}
		if strings.Contains(got, "zqkid") || strings.Contains(got, "kc1") || strings.Contains(got, "data-child") ||
			strings.Contains(got, secret) {
			t.Errorf("GET %s (without children) carries a trace of the child", path)
		}
	}
	// Scoped at the spawning call: the child's events all came later.
	for _, path := range []string{scoped.Page(), scoped.ExportHTML()} {
		_, got := e.get(t, path)
		if sd := doc(t, got); sd.Find(`[data-testid="child"]`).Length() != 1 || sd.Find(`[data-testid="child-calls"]`).Text() != "0 calls" ||
			strings.Contains(got, "zqkid") {
			t.Errorf("GET %s (scoped at the spawning call) shows the child as %q, want nested with 0 calls", path, sd.Find(`[data-testid="child-calls"]`).Text())
		}
	}

	// The child's own link, even made with children, never names its parent.
	kl, _ := shareLinksOf2(t, e, "k", `{"children":true}`)
	for _, path := range []string{kl.Page(), kl.ExportHTML(), kl.Events()} {
		_, got := e.get(t, path)
		for _, w := range []string{`/sessions/p`, "delegate", `>p</a>`, `"p"`} {
			if i := strings.Index(got, w); i >= 0 {
				t.Logf("%s: %q at %q", path, w, got[max(0, i-200):min(len(got), i+100)])
			}
		}
		if strings.Contains(got, `/sessions/p`) || strings.Contains(got, "delegate") || strings.Contains(got, `>p</a>`) || strings.Contains(got, `"p"`) {
			t.Errorf("GET %s (the child's link) reveals its parent", path)
		}
	}
}

// TestShareFork_neverNamesItsSource: a fork's link (page, saved page,
// JSONL, live stream) never names the session it was forked from — its
// header's parentSession is the source's id, an owner's fact — while the
// inherited events it shows as its own stay.
func TestShareFork_neverNamesItsSource(t *testing.T) {
	e, _ := shareEnv(t, nil)
	src := coretest.NewBuilder(t0)
	src.TurnStart().StepStart().User("zqsource prompt").Call("c1", "note", `{"title":"t"}`).
		Result("c1", "noted", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	e.session(t, "zqsrc", src.Events)
	seed := int64(len(src.Events))
	if err := e.store.CreateSession(context.Background(), core.SessionHeader{ID: "f", CreatedAt: t0 + 300, Cwd: "/work",
		ParentSession: "zqsrc", SeedLength: &seed}); err != nil {
		t.Fatal(err)
	}
	e.append(t, "f", src.Events...)

	l, _ := shareLinksOf2(t, e, "f", `{}`)
	for _, path := range []string{l.Page(), l.ExportHTML(), l.Events()} {
		_, got := e.get(t, path)
		if !strings.Contains(got, "zqsource prompt") {
			t.Errorf("GET %s: the fork's inherited events are missing", path)
		}
		if i := strings.Index(got, "zqsrc"); i >= 0 {
			t.Errorf("GET %s names the fork's source: %q", path, got[max(0, i-120):min(len(got), i+40)])
		}
	}
	st := e.stream(t, l.Stream(-1))
	for _, d := range st.next(t).Data {
		if strings.Contains(d, "zqsrc") {
			t.Errorf("the fork link's stream names its source: %s", d)
		}
	}
}
