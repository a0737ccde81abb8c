package web_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/web"
)

// family is a parent "p" whose subagent call "s1" (pending) linked child
// "k", whose own call "kc1" is pending too; it returns the child's builder
// to go on with and the seq of the parent's tool/call.
func family(t *testing.T, e *env) (*coretest.Builder, int64) {
	t.Helper()
	ctx := context.Background()
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate").Call("s1", "subagent", `{"description":"count files","prompt":"Count."}`)
	e.session(t, "p", pb.Events)
	callSeq := pb.Events[len(pb.Events)-1].Seq
	one := int64(1)
	if err := e.store.CreateSession(ctx, core.SessionHeader{ID: "k", CreatedAt: t0 + 100, Cwd: "/work", ParentSession: "p",
		Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
		t.Fatal(err)
	}
	kb := coretest.NewBuilder(t0 + 100)
	kb.AddRaw(core.EventSubagentDescr, []byte(`{"version":2,"mode":"one-shot","label":"count files"}`), nil)
	kb.TurnStart().StepStart().User("Count.").Call("kc1", "note", `{"title":"files"}`)
	e.append(t, "k", kb.Events...)
	in, err := notes.Link("p", "s1", callSeq, notes.LinkData{Child: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutNote(ctx, in); err != nil {
		t.Fatal(err)
	}
	return kb, callSeq
}

// TestChildren_nestedLiveAndGone: the subagent call's card nests its child
// (status, its calls, the way to its page) while the call is pending; the
// child's commits reach the parent's page over the parent's own stream;
// the child's deletion turns the nest into "child not found".
func TestChildren_nestedLiveAndGone(t *testing.T) {
	e := newEnv(t, withNotes)
	kb, _ := family(t, e)
	_, page := e.get(t, "/sessions/p")
	d := doc(t, page)
	child := d.Find(`[data-call-id="s1"] [data-testid="child"]`)
	if child.AttrOr("data-child", "") != "k" || child.AttrOr("data-child-status", "") != "running" {
		t.Fatalf("the pending call's child = %q status %q, want k running", child.AttrOr("data-child", ""), child.AttrOr("data-child-status", ""))
	}
	if got := child.Find(`[data-testid="child-calls"]`).Text(); got != "1 call" {
		t.Errorf("child calls = %q", got)
	}
	if href := child.Find(`[data-testid="child-open"]`).AttrOr("href", ""); href != "/sessions/k" {
		t.Errorf("open = %q", href)
	}
	nested := child.Find(`[data-testid="tool-card"]`)
	if nested.Length() != 1 || nested.AttrOr("data-call-id", "") != "kc1" || nested.AttrOr("data-state", "") != "pending" {
		t.Errorf("nested cards = %d (%s %s)", nested.Length(), nested.AttrOr("data-call-id", ""), nested.AttrOr("data-state", ""))
	}

	// Live: the child's result and turn end come over the parent's stream.
	s := e.stream(t, "/sessions/p/stream?after=-1")
	s.next(t)
	kb.Result("kc1", "two files", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	e.append(t, "k", kb.Events[len(kb.Events)-3:]...)
	s.until(t, func(ev sseEvent) bool {
		el := ev.Elements()
		return strings.Contains(el, `data-child-status="finished"`) && strings.Contains(el, `data-call-id="kc1"`) &&
			strings.Contains(el, `data-state="ok"`)
	})

	// The child is deleted while the parent's page is open.
	if _, err := e.store.DeleteSession(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	s.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `data-testid="child-missing"`) })
	_, page = e.get(t, "/sessions/p")
	if got := doc(t, page).Find(`[data-testid="child-missing"]`).Text(); !strings.Contains(got, "child not found") || !strings.Contains(got, "k") {
		t.Errorf("after the child's deletion the card says %q", got)
	}
}

// TestChildren_timeAndScope: at an event before the link's atSeq the card
// nests nothing; at the call it does; a share link of the parent never
// nests the child (nor names it), and the child's own share page does not
// reveal its parent.
func TestChildren_timeAndScope(t *testing.T) {
	e, _ := shareEnv(t, withNotes)
	_, callSeq := family(t, e)
	// A later parent event (after all of the child's): the page at the
	// call is then a page in the past.
	e.append(t, "p", core.Event{Type: "x-test/mark", Seq: callSeq + 1, Time: t0 + 10_000, Data: []byte(`{}`), Ignorable: true})
	_, before := e.get(t, "/sessions/p?at="+strconv.FormatInt(callSeq-1, 10))
	if strings.Contains(before, `data-testid="child"`) {
		t.Error("the page before the spawning call nests the child")
	}
	_, at := e.get(t, "/sessions/p?at="+strconv.FormatInt(callSeq, 10))
	if !strings.Contains(at, `data-child="k"`) {
		t.Error("the page at the spawning call does not nest the child")
	}
	// The child's events all came after the parent's event shown: at it,
	// the nested child has none of them.
	if ad := doc(t, at); ad.Find(`[data-testid="child-calls"]`).Text() != "0 calls" || ad.Find(`[data-testid="child"] [data-testid="tool-card"]`).Length() != 0 {
		t.Errorf("at the spawning call the child shows %q and %d cards, want none yet",
			ad.Find(`[data-testid="child-calls"]`).Text(), ad.Find(`[data-testid="child"] [data-testid="tool-card"]`).Length())
	}
	_, path := e.share(t, "p", `{}`)
	if _, page := e.raw(t, "GET", path); strings.Contains(page, `data-testid="child"`) || strings.Contains(page, `/sessions/k`) {
		t.Error("the parent's share link nests or links its child")
	}
	_, kpath := e.share(t, "k", `{}`)
	if _, page := e.raw(t, "GET", kpath); strings.Contains(page, `/sessions/p"`) || strings.Contains(page, `>p</a>`) {
		t.Error("the child's share page reveals its parent")
	}
}

// TestChildren_listGroupsAndPath: the list shows a child under its
// parent, collapsed behind a count, and a grandchild's page shows the
// path parent › child › grandchild.
func TestChildren_listGroupsAndPath(t *testing.T) {
	e := newEnv(t, withNotes)
	family(t, e)
	two := int64(2)
	ctx := context.Background()
	if err := e.store.CreateSession(ctx, core.SessionHeader{ID: "g", CreatedAt: t0 + 200, Cwd: "/work", ParentSession: "k",
		Origin: core.OriginSubagent, DelegationDepth: &two}); err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	if err := e.store.CreateSession(ctx, core.SessionHeader{ID: "f", CreatedAt: t0 + 300, Cwd: "/work", ParentSession: "p", SeedLength: &seed}); err != nil {
		t.Fatal(err)
	}
	_, page := e.get(t, "/")
	d := doc(t, page)
	var order, nested []string
	d.Find(`[data-testid="session-row"]`).Each(func(_ int, s *goquery.Selection) {
		id := s.AttrOr("data-session-id", "")
		order = append(order, id)
		if s.HasClass("nested") {
			nested = append(nested, id)
		}
	})
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	if pos["k"] != pos["p"]+1 || pos["g"] != pos["k"]+1 || strings.Join(nested, ",") != "k,g" {
		t.Errorf("rows %v (nested %v): want k then g right under p, nested; the fork f on its own", order, nested)
	}
	if got := d.Find(`[data-session-id="p"] [data-testid="row-kids"]`).Text(); strings.TrimSpace(got) != "1 subagent" {
		t.Errorf("the parent's count = %q", got)
	}
	if d.Find(`[data-session-id="k"]`).HasClass("open") || !strings.HasPrefix(d.Find(`[data-session-id="k"]`).AttrOr("data-class:open", ""), "$kids") {
		t.Error("the child's row is not collapsed")
	}
	_, gpage := e.get(t, "/sessions/g")
	path := doc(t, gpage).Find(`[data-testid="session-path"] dd`)
	var links []string
	path.Find("a").Each(func(_ int, a *goquery.Selection) { links = append(links, a.AttrOr("href", "")) })
	if strings.Join(links, " ") != "/sessions/p /sessions/k" || !strings.Contains(path.Text(), "g") {
		t.Errorf("grandchild's path = %q %v", path.Text(), links)
	}
}

// TestChildren_searchNamesTheParent: a search hit inside a child names
// the session it is a subagent of.
func TestChildren_searchNamesTheParent(t *testing.T) {
	e := newEnv(t, withNotes)
	family(t, e)
	_, page := e.get(t, "/search?q=files")
	d := doc(t, page)
	kid := d.Find(`[data-testid="hit-group"][data-session-id="k"]`)
	if kid.Length() != 1 {
		t.Fatalf("no hits in the child (groups %d)", d.Find(`[data-testid="hit-group"]`).Length())
	}
	if a := kid.Find(`[data-testid="hit-parent"] a`); a.AttrOr("href", "") != "/sessions/p" || a.Text() != "p" {
		t.Errorf("the child's hits name %q (%q), want p", a.Text(), a.AttrOr("href", ""))
	}
	if d.Find(`[data-testid="hit-group"][data-session-id="p"] [data-testid="hit-parent"]`).Length() != 0 {
		t.Error("the parent's hits name a parent")
	}
}

// readCounter counts, per session, the notes reads and whole-log loads
// the server makes.
type readCounter struct {
	backend.Source
	notes web.NoteStore
	mu    sync.Mutex
	n     map[string]int // "notes:<id>", "load:<id>"
}

func (c *readCounter) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
}

func (c *readCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *readCounter) LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
	c.count("load:" + id)
	return c.Source.LoadSession(ctx, id)
}

func (c *readCounter) Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error) {
	c.count("notes:" + session)
	return c.notes.Notes(ctx, session, q)
}

func (c *readCounter) PutNote(ctx context.Context, in notes.Input) (notes.Note, error) {
	return c.notes.PutNote(ctx, in)
}

func (c *readCounter) RemoveNote(ctx context.Context, session, id string) (notes.Note, error) {
	return c.notes.RemoveNote(ctx, session, id)
}

// TestChildren_childCommitCostsItsNewEvents: each of a child's commits
// reaches the open parent page — after the first, as the nested child's
// summary line and its new card only, not the whole nesting card —
// without reading the parent's notes again (they did not change) and
// without loading the child's whole log again: the nested child takes
// only its new events, so a child commit costs the same at any log
// length.
func TestChildren_childCommitCostsItsNewEvents(t *testing.T) {
	var rc *readCounter
	e := newEnv(t, func(d *web.Deps) {
		withNotes(d)
		rc = &readCounter{Source: d.Sessions.(backend.Source), notes: d.Notes, n: map[string]int{}}
		d.Sessions, d.Notes = rc, rc
	})
	kb, _ := family(t, e)
	s := e.stream(t, "/sessions/p/stream?after=-1")
	s.next(t)
	var notesBefore, loadsBefore int
	for i := range 5 {
		if i == 1 {
			// Counted from the second commit: whatever of the family's
			// making reached the page late is behind the first.
			notesBefore, loadsBefore = rc.get("notes:p"), rc.get("load:k")
		}
		id := "kx" + strconv.Itoa(i)
		n := len(kb.Events)
		kb.Call(id, "note", `{"title":"x"}`)
		e.append(t, "k", kb.Events[n:]...)
		var card, count bool
		evs := s.until(t, func(ev sseEvent) bool {
			el := ev.Elements()
			card = card || strings.Contains(el, `data-call-id="`+id+`"`)
			count = count || strings.Contains(el, `data-testid="child-calls">`+strconv.Itoa(i+2)+` calls<`)
			return card && count
		})
		if i == 0 {
			continue // the first move since the page loaded sends the card whole
		}
		// Later ones send what changed: the summary line and the new
		// card, not the nested cards that did not change.
		for _, ev := range evs {
			if el := ev.Elements(); strings.Contains(el, `data-call-id="kc1"`) || strings.Contains(el, `data-call-id="s1"`) {
				t.Errorf("child commit %s re-sent unchanged cards: %.300s", id, el)
			}
		}
	}
	if got := rc.get("notes:p") - notesBefore; got != 0 {
		t.Errorf("4 child commits read the parent's notes %d times, want 0 (its notes did not change)", got)
	}
	if got := rc.get("load:k") - loadsBefore; got != 0 {
		t.Errorf("4 child commits loaded the child's whole log %d times, want 0 (only its new events)", got)
	}
}
