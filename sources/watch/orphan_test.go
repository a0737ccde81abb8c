package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/claudecode"
	"prism/sources/watch"
)

// family is a parent transcript and its child's, written under a watched
// folder in some order, and what linking them must give.
type family struct {
	name string
	// parentRel and childRel are the files under the folder.
	parentRel, childRel string
	// parentHead is the parent's lines before the spawning call (may be
	// ""), parentRest its spawning call and what follows; child the
	// child's lines.
	parentHead, parentRest, child string
	// childMore and parentMore are lines each writes on afterwards.
	childMore, parentMore     string
	parentID, childID, callID string
}

// families are a Claude Code session with a subagent file (the current
// layout, no sidecar: linked by the parent's result naming its agentId),
// one with the older layout's agent file beside it, and a Codex parent
// rollout with a child thread's.
func families() []family {
	const sid = "5b0e3c1a-0000-4000-8000-0000000000c1"
	c := claudeLines{sid: sid}
	ccHead := c.prompt("Investigate the flaky build") + c.call(1) + c.result(1)
	ccRest := c.agentCall(52, "Task", "Count the files") + c.agentResult(52, "b1", "completed") +
		c.env("assistant", "e1", 62) + `,"message":{"id":"msg_e","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}}` + "\n"
	const old = "5b0e3c1a-0000-4000-8000-0000000000c2"
	o := claudeLines{sid: old}
	oldHead := o.prompt("Look around")
	oldRest := o.agentCall(7, "Agent", "List the packages") + o.agentResult(7, "d4", "completed")
	const parent, child = "0196a1b2-0000-7000-8000-0000000000d1", "0196a1b2-0000-7000-8000-0000000000d2"
	pText, cText := codexFamily(parent, child)
	// The Codex parent's head: up to the spawning call.
	at := strings.Index(pText, `{"timestamp":"2026-05-01T10:00:08.000Z"`)
	return []family{
		{name: "claude-subagents", parentRel: "-home-dev-app/" + sid + ".jsonl", childRel: "-home-dev-app/" + sid + "/subagents/agent-b1.jsonl",
			parentHead: ccHead, parentRest: ccRest, child: c.childLines("b1", "Count the files"),
			childMore: sidechain(c.call(901), "b1"), parentMore: c.call(70),
			parentID: sid, childID: claudecode.ChildID(sid, "b1"), callID: "toolu_52"},
		{name: "claude-beside", parentRel: "-home-dev-old/" + old + ".jsonl", childRel: "-home-dev-old/agent-d4.jsonl",
			parentHead: oldHead, parentRest: oldRest, child: o.childLines("d4", "List the packages"),
			childMore: sidechain(o.call(901), "d4"), parentMore: o.call(70),
			parentID: old, childID: claudecode.ChildID(old, "d4"), callID: "toolu_7"},
		{name: "codex", parentRel: "2026/05/01/rollout-2026-05-01T10-00-00-" + parent + ".jsonl", childRel: "2026/05/01/rollout-2026-05-01T10-00-08-" + child + ".jsonl",
			parentHead: pText[:at], parentRest: pText[at:], child: cText,
			childMore:  `{"timestamp":"2026-05-01T10:00:10.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"More."}]}}` + "\n",
			parentMore: `{"timestamp":"2026-05-01T10:01:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_E","output":"Exit code: 0"}}` + "\n",
			parentID:   parent, childID: child, callID: "call_C"},
	}
}

// linkStore is a store the linking tests run the watcher into (db's and
// pgstore's): what the watcher writes through, and the source info it
// recorded.
type linkStore interface {
	watchStore
	SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error)
}

// engines open a fresh store of each engine: SQLite (a file) and
// PostgreSQL (the package's test cluster).
var engines = []struct {
	name string
	open func(t *testing.T) linkStore
}{
	{"sqlite", func(t *testing.T) linkStore { return newTestStore(t) }},
	{"postgres", func(t *testing.T) linkStore {
		st, err := pgstore.Open(context.Background(), pgtest.DB(t), pgstore.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// eachFamily runs fn for each family on each engine.
func eachFamily(t *testing.T, fn func(t *testing.T, st linkStore, f family)) {
	for _, e := range engines {
		for _, f := range families() {
			t.Run(e.name+"/"+f.name, func(t *testing.T) { fn(t, e.open(t), f) })
		}
	}
}

// sidechain marks a Claude Code line as subagent agentID's.
func sidechain(line, agentID string) string {
	return strings.ReplaceAll(line, `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
}

// infoCounting is a store counting the source infos written, by session.
type infoCounting struct {
	linkStore
	puts map[string]int
}

func (s *infoCounting) PutSourceInfo(ctx context.Context, id string, info core.SourceInfo) error {
	s.puts[id]++
	return s.linkStore.PutSourceInfo(ctx, id, info)
}

// appendFile appends text to the file at path, made with its folders.
func appendFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// linkedChildren returns the children that session parent's link notes
// name, by the call they are on.
func linkedChildren(t *testing.T, st linkStore, parent string) map[string][]string {
	t.Helper()
	ns, err := st.Notes(context.Background(), parent, notes.Query{Kind: notes.KindLink})
	if err != nil {
		if core.ErrorCode(err) == core.CodeNotFound {
			return nil
		}
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, n := range ns {
		d, err := notes.ParseLink(n.Data)
		if err != nil {
			t.Fatalf("link note %s: %v", n.ID, err)
		}
		out[n.CallID] = append(out[n.CallID], d.Child)
	}
	return out
}

// checkLinked asserts that f's child is stored as its parent's child:
// its header names the parent, its source info the spawning call and no
// missing parent, and the parent's link note on that call names it (what
// the parent's page nests the child's cards by).
func checkLinked(t *testing.T, st linkStore, f family) {
	t.Helper()
	ctx := context.Background()
	l, err := st.LoadSession(ctx, f.childID)
	if err != nil {
		t.Fatalf("%s: child not stored: %v", f.name, err)
	}
	if h := l.Info.Header; h.ChildOf() != f.parentID || l.Info.ParentID != f.parentID {
		t.Errorf("%s: child's header %+v (parent %q), want a subagent of %s", f.name, h, l.Info.ParentID, f.parentID)
	}
	info, found, err := st.SourceInfo(ctx, f.childID)
	if err != nil || !found {
		t.Fatalf("%s: child's source info: %v, found %v", f.name, err, found)
	}
	if info.MissingParent != "" || info.SpawnedBy == nil || info.SpawnedBy.CallID != f.callID {
		t.Errorf("%s: child's source info %+v (spawned by %+v), want spawned by %s and no missing parent", f.name, info, info.SpawnedBy, f.callID)
	}
	links := linkedChildren(t, st, f.parentID)
	if got := links[f.callID]; len(got) != 1 || got[0] != f.childID {
		t.Errorf("%s: parent's link notes %v, want %s on %s", f.name, links, f.childID, f.callID)
	}
}

// TestWatchChildBeforeParent writes a child's transcript, whole, before
// its parent's file exists, polls, then writes the parent's (its spawning
// call included) and polls again: the child, though its own file never
// changes again, becomes the parent's child, linked to the spawning call.
// The child is read again only then (not on quiet polls, nor once
// linked, when the parent grows on), its recheck leaves the folder's
// health row as the parent's read left it, and the child read on from
// there (incrementally, its header changed) is what a whole read gives;
// its source info is written when it changes only.
func TestWatchChildBeforeParent(t *testing.T) {
	ctx := context.Background()
	eachFamily(t, func(t *testing.T, base linkStore, f family) {
		st := &infoCounting{linkStore: base, puts: map[string]int{}}
		root := t.TempDir()
		childPath, parentPath := filepath.Join(root, f.childRel), filepath.Join(root, f.parentRel)
		t0 := time.Now().Truncate(time.Second)
		now := t0
		childReads := 0
		w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Now: func() time.Time { return now },
			Synced: func(s watch.Sync) {
				if s.Err != nil {
					t.Errorf("%s: %v", s.Path, s.Err)
				}
				if s.Path == childPath {
					childReads++
				}
			}})
		scan := func() {
			t.Helper()
			if err := w.Scan(ctx); err != nil {
				t.Fatal(err)
			}
		}
		appendFile(t, childPath, f.child)
		scan()
		l, err := st.LoadSession(ctx, f.childID)
		if err != nil {
			t.Fatalf("child not stored: %v", err)
		}
		if l.Info.ParentID != "" {
			t.Fatalf("the child read before its parent exists has parent %q", l.Info.ParentID)
		}
		if info, _, _ := st.SourceInfo(ctx, f.childID); info.MissingParent != f.parentID {
			t.Fatalf("the child read before its parent exists: source info %+v, want its missing parent named", info)
		}
		scan() // quiet
		if childReads != 1 {
			t.Fatalf("the waiting child was read %d times by two polls, want once", childReads)
		}
		// An hour later the parent is written (its file as fresh as the
		// clock): the child's file, an hour old, is read again but lags
		// nothing.
		now = t0.Add(time.Hour)
		appendFile(t, parentPath, f.parentHead+f.parentRest)
		if err := os.Chtimes(parentPath, now, now); err != nil {
			t.Fatal(err)
		}
		scan()
		checkLinked(t, st, f)
		if childReads != 2 {
			t.Errorf("the child was read %d times, want once more once its parent is in", childReads)
		}
		for _, r := range w.SourceHealth() {
			if r.LastPath != "" && (r.LastPath != parentPath || r.Lag != 0) {
				t.Errorf("health row %s: last read %s, lag %v; want the parent's, no lag", r.Kind, r.LastPath, r.Lag)
			}
		}
		// Linked: the parent growing on reads the child no more.
		appendFile(t, parentPath, f.parentMore)
		scan()
		scan()
		checkLinked(t, st, f)
		if childReads != 2 {
			t.Errorf("the linked child was read again (%d reads) as its parent grew", childReads)
		}
		// The child growing on is stored as a whole read gives it.
		appendFile(t, childPath, f.childMore)
		scan()
		checkLinked(t, st, f)
		whole := wholeRead(t, childPath)
		if len(whole) != 1 {
			t.Fatalf("a whole read of the child gives %d sessions", len(whole))
		}
		stored, err := st.LoadSession(ctx, f.childID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := eventsJSON(t, stored.Events), eventsJSON(t, whole[0].Events); !reflect.DeepEqual(got, want) || len(got) <= len(l.Events) {
			t.Errorf("the grown child: stored %d events (%d before), a whole read %d; first difference:\n%s", len(got), len(l.Events), len(want), firstDiff(got, want))
		}
		if n := st.puts[f.childID]; n != 2 {
			t.Errorf("the child's source info was written %d times, want twice (missing parent, then spawned by %s)", n, f.callID)
		}
	})
}

// TestWatchChildBeforeSpawningLine writes the parent's first lines, then
// the child's whole transcript, then the parent's spawning call and what
// follows, polling after each: the child, whose file never changes again,
// is linked to the call once its line is in.
func TestWatchChildBeforeSpawningLine(t *testing.T) {
	ctx := context.Background()
	eachFamily(t, func(t *testing.T, st linkStore, f family) {
		root := t.TempDir()
		w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
		appendFile(t, filepath.Join(root, f.parentRel), f.parentHead)
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		appendFile(t, filepath.Join(root, f.childRel), f.child)
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if links := linkedChildren(t, st, f.parentID); len(links) != 0 {
			t.Fatalf("linked before the spawning call was written: %v", links)
		}
		appendFile(t, filepath.Join(root, f.parentRel), f.parentRest)
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		checkLinked(t, st, f)
	})
}

// TestWatchParentBeforeChild is the order the watcher expects: the
// parent's spawning call written first, the child's file appearing
// later; the child is linked on the poll that reads it.
func TestWatchParentBeforeChild(t *testing.T) {
	ctx := context.Background()
	eachFamily(t, func(t *testing.T, st linkStore, f family) {
		root := t.TempDir()
		w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
		appendFile(t, filepath.Join(root, f.parentRel), f.parentHead+f.parentRest)
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		appendFile(t, filepath.Join(root, f.childRel), f.child)
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		checkLinked(t, st, f)
	})
}

// TestWatchGrandchildBeforeAll writes a Codex thread's grandchild's
// rollout first, its child's next, its own last, polling after each: the
// poll that reads the top thread links the child to it, and the child's
// new header reaches the grandchild, linked to the child's call since
// the child's rollout appeared.
func TestWatchGrandchildBeforeAll(t *testing.T) {
	ctx := context.Background()
	const top, mid, leaf = "0196a1b2-0000-7000-8000-0000000000a1", "0196a1b2-0000-7000-8000-0000000000a2", "0196a1b2-0000-7000-8000-0000000000a3"
	topText, _ := codexFamily(top, mid)
	midText, leafText := codexFamily(mid, leaf)
	midText = strings.Replace(midText, `"source":"cli"`, `"source":{"subagent":{"thread_spawn":{"parent_thread_id":"`+top+`","depth":1}}}`, 1)
	day := "2026/05/01/"
	steps := []struct{ rel, text string }{
		{day + "rollout-2026-05-01T10-00-09-" + leaf + ".jsonl", leafText},
		{day + "rollout-2026-05-01T10-00-08-" + mid + ".jsonl", midText},
		{day + "rollout-2026-05-01T10-00-00-" + top + ".jsonl", topText},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			st := e.open(t)
			root := t.TempDir()
			w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
			for _, s := range steps {
				appendFile(t, filepath.Join(root, s.rel), s.text)
				if err := w.Scan(ctx); err != nil {
					t.Fatal(err)
				}
			}
			checkLinked(t, st, family{name: "mid", parentID: top, childID: mid, callID: "call_C"})
			checkLinked(t, st, family{name: "leaf", parentID: mid, childID: leaf, callID: "call_C"})
		})
	}
}
