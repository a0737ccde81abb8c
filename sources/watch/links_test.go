package watch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/notes"
	"prism/sources/claudecode"
	"prism/sources/watch"
	"prism/store"
)

// readCounting is a store counting the reads of one session's events
// (whole or in part), by the method read through.
type readCounting struct {
	linkStore
	id    string
	reads map[string]int
}

func (s *readCounting) LoadSession(ctx context.Context, id string) (*store.SessionLog, error) {
	if id == s.id {
		s.reads["LoadSession"]++
	}
	return s.linkStore.LoadSession(ctx, id)
}

func (s *readCounting) EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error) {
	if id == s.id {
		s.reads["EventsAfter"]++
	}
	return s.linkStore.EventsAfter(ctx, id, after)
}

func (s *readCounting) EventsUpTo(ctx context.Context, id string, seq int64) ([]core.Event, error) {
	if id == s.id {
		s.reads["EventsUpTo"]++
	}
	return s.linkStore.EventsUpTo(ctx, id, seq)
}

func (s *readCounting) CallEvents(ctx context.Context, id, callID string, withTypes ...string) ([]core.Event, error) {
	if id == s.id {
		s.reads["CallEvents"]++
	}
	return s.linkStore.CallEvents(ctx, id, callID, withTypes...)
}

func (s *readCounting) total() int {
	n := 0
	for _, c := range s.reads {
		n += c
	}
	return n
}

// TestWatchPendingLinkCost: a child whose spawning call never reaches the
// store (the parent's transcript has the result naming the child, not
// the call) costs no read of the parent on a poll in which the parent
// was not written, never a read of the parent's whole log, and is given
// up on after a bounded number of tries, reported in the folder's
// health.
func TestWatchPendingLinkCost(t *testing.T) {
	ctx := context.Background()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			const sid = "5b0e3c1a-0000-4000-8000-0000000000e1"
			c := claudeLines{sid: sid}
			st := &readCounting{linkStore: e.open(t), id: sid, reads: map[string]int{}}
			root := t.TempDir()
			parentPath := filepath.Join(root, "-home-dev-app", sid+".jsonl")
			w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats()})
			scan := func() {
				t.Helper()
				if err := w.Scan(ctx); err != nil {
					t.Fatal(err)
				}
			}
			appendFile(t, parentPath, c.prompt("Investigate")+c.agentResult(52, "b1", "completed"))
			appendFile(t, filepath.Join(root, "-home-dev-app", sid, "subagents", "agent-b1.jsonl"), c.childLines("b1", "Count the files"))
			scan()
			info, _, err := st.SourceInfo(ctx, claudecode.ChildID(sid, "b1"))
			if err != nil || info.SpawnedBy == nil || info.SpawnedBy.CallID != "toolu_52" {
				t.Fatalf("the child's source info %+v (%v), want spawned by toolu_52", info, err)
			}
			if links := linkedChildren(t, st, sid); len(links) != 0 {
				t.Fatalf("linked to a call not stored: %v", links)
			}
			first := st.total()
			if first == 0 {
				t.Fatal("the pending link was not tried on the poll that found it")
			}
			for range 10 {
				scan()
			}
			if n := st.total() - first; n != 0 {
				t.Errorf("10 polls in which the parent was not written read it %d times (%v), want none", n, st.reads)
			}
			for i := range 40 {
				appendFile(t, parentPath, c.call(100+i))
				scan()
			}
			if n := st.reads["LoadSession"] + st.reads["EventsAfter"] + st.reads["EventsUpTo"]; n != 0 {
				t.Errorf("the pending link read the parent's log %d times (%v), want it looked up by call id only", n, st.reads)
			}
			if n := st.total(); n > 20 {
				t.Errorf("40 polls writing the parent read it %d times (%v), want the pending link given up on (at most 20 reads)", n, st.reads)
			}
			found := false
			for _, r := range w.SourceHealth() {
				if r.Kind == "claude-code" && strings.Contains(r.LastError, "toolu_52 was not stored") {
					found = true
				}
			}
			if !found {
				t.Errorf("health %+v: no row says the link was given up on", w.SourceHealth())
			}
		})
	}
}

// linkNotes returns the link notes of session parent naming child, as
// "call inferred=…".
func linkNotes(t *testing.T, st linkStore, parent, child string) []string {
	t.Helper()
	ns, err := st.Notes(context.Background(), parent, notes.Query{Kind: notes.KindLink})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range ns {
		d, err := notes.ParseLink(n.Data)
		if err != nil {
			t.Fatal(err)
		}
		if d.Child == child {
			out = append(out, n.CallID+" inferred="+map[bool]string{true: "true", false: "false"}[d.Inferred])
		}
	}
	return out
}

// TestWatchUpgradesInferredLink: a child read while its parent's only
// trace of it is the spawning call (matched by its prompt) is linked
// inferred; once the parent's result naming the child is written, the
// link note says so exactly — the same note when the match was right,
// moved to the right call when two calls had the child's prompt.
func TestWatchUpgradesInferredLink(t *testing.T) {
	ctx := context.Background()
	const sid = "5b0e3c1a-0000-4000-8000-0000000000e2"
	c := claudeLines{sid: sid}
	const parent, child = "0196a1b2-0000-7000-8000-0000000000e3", "0196a1b2-0000-7000-8000-0000000000e4"
	pText, cText := codexFamily(parent, child)
	at := strings.Index(pText, `{"timestamp":"2026-05-01T10:00:08.200Z"`)
	cases := []struct {
		name                    string
		parentRel, childRel     string
		head, rest, childText   string
		parentID, childID       string
		inferredCall, exactCall string
		// quiet is a line of the parent's that leaves the inferred
		// call's events as they were ("": none tried).
		quiet string
	}{
		{name: "claude", parentRel: "-home-dev-app/" + sid + ".jsonl", childRel: "-home-dev-app/" + sid + "/subagents/agent-b1.jsonl",
			head: c.prompt("Go") + c.agentCall(52, "Task", "Count the files"), rest: c.agentResult(52, "b1", "completed"),
			childText: c.childLines("b1", "Count the files"), parentID: sid, childID: claudecode.ChildID(sid, "b1"),
			inferredCall: "toolu_52", exactCall: "toolu_52"},
		{name: "claude-two-calls", parentRel: "-home-dev-app/" + sid + ".jsonl", childRel: "-home-dev-app/" + sid + "/subagents/agent-b1.jsonl",
			head:      c.prompt("Go") + c.agentCall(52, "Task", "Count the files") + c.agentCall(53, "Task", "Count the files"),
			rest:      c.agentResult(53, "b1", "completed") + c.agentResult(52, "b2", "completed"),
			childText: c.childLines("b1", "Count the files"), parentID: sid, childID: claudecode.ChildID(sid, "b1"),
			inferredCall: "toolu_52", exactCall: "toolu_53"},
		{name: "codex", parentRel: "2026/05/01/rollout-2026-05-01T10-00-00-" + parent + ".jsonl", childRel: "2026/05/01/rollout-2026-05-01T10-00-08-" + child + ".jsonl",
			head: pText[:at], rest: pText[at:], childText: cText, parentID: parent, childID: child,
			inferredCall: "call_C", exactCall: "call_C",
			quiet: `{"timestamp":"2026-05-01T10:00:08.150Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0,"total_tokens":2}}}}` + "\n"},
	}
	for _, e := range engines {
		for _, tc := range cases {
			t.Run(e.name+"/"+tc.name, func(t *testing.T) {
				st := e.open(t)
				root := t.TempDir()
				childReads := 0
				w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(),
					Synced: func(s watch.Sync) {
						if s.Err != nil {
							t.Errorf("%s: %v", s.Path, s.Err)
						}
						if s.Path == filepath.Join(root, tc.childRel) {
							childReads++
						}
					}})
				scan := func() {
					t.Helper()
					if err := w.Scan(ctx); err != nil {
						t.Fatal(err)
					}
				}
				appendFile(t, filepath.Join(root, tc.parentRel), tc.head)
				appendFile(t, filepath.Join(root, tc.childRel), tc.childText)
				scan()
				if got, want := strings.Join(linkNotes(t, st, tc.parentID, tc.childID), ", "), tc.inferredCall+" inferred=true"; got != want {
					t.Fatalf("before the parent names the child: links %q, want %q", got, want)
				}
				if tc.quiet != "" {
					before := childReads
					appendFile(t, filepath.Join(root, tc.parentRel), tc.quiet)
					scan()
					if childReads != before {
						t.Errorf("the inferred child was read again (%d reads) as its parent grew without touching its call", childReads-before)
					}
				}
				appendFile(t, filepath.Join(root, tc.parentRel), tc.rest)
				scan()
				if got, want := strings.Join(linkNotes(t, st, tc.parentID, tc.childID), ", "), tc.exactCall+" inferred=false"; got != want {
					t.Errorf("once the parent names the child: links %q, want %q", got, want)
				}
				info, _, err := st.SourceInfo(ctx, tc.childID)
				if err != nil || info.SpawnedBy == nil || info.SpawnedBy.CallID != tc.exactCall || info.SpawnedBy.Inferred {
					t.Errorf("the child's source info %+v (%v), want spawned exactly by %s", info.SpawnedBy, err, tc.exactCall)
				}
			})
		}
	}
}

// TestWatchInferredWaitIsBounded: a child linked only by its prompt waits
// for its parent to name it. The parent's writes that leave the matched
// call's events as they were — progress lines while the subagent runs,
// other calls — cost no read of it however many, and a result naming the
// child after them still makes the link exact. Writes of the call's
// events that never name the child cost a bounded number of reads: the
// wait is given up after maxLinkTries of them, reported in the kind's
// health row, the inferred link kept, and nothing is read for it
// afterwards, not even when the child's file is read again.
func TestWatchInferredWaitIsBounded(t *testing.T) {
	for _, e := range engines {
		for _, named := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/named=%v", e.name, named), func(t *testing.T) {
				const sid = "5b0e3c1a-0000-4000-8000-0000000000e5"
				c := claudeLines{sid: sid}
				st := &readCounting{linkStore: e.open(t), id: sid, reads: map[string]int{}}
				root := t.TempDir()
				parentPath := filepath.Join(root, "-home-dev-app", sid+".jsonl")
				childPath := filepath.Join(root, "-home-dev-app", sid, "subagents", "agent-b1.jsonl")
				w := newQuietWatcher(t, st, root)
				appendFile(t, parentPath, c.prompt("Go")+c.agentCall(52, "Task", "Count the files"))
				appendFile(t, childPath, c.childLines("b1", "Count the files"))
				scanOK(t, w)
				child := claudecode.ChildID(sid, "b1")
				if got := strings.Join(linkNotes(t, st, sid, child), ", "); got != "toolu_52 inferred=true" {
					t.Fatalf("links %q, want toolu_52 inferred", got)
				}
				givenUp := func() bool {
					for _, r := range w.SourceHealth() {
						if r.Kind == "claude-code" && strings.Contains(r.LastError, child) && strings.Contains(r.LastError, "toolu_52") && strings.Contains(r.LastError, "inferred") {
							return true
						}
					}
					return false
				}
				first := st.reads["CallEvents"]
				if named {
					for i := range 60 {
						appendFile(t, parentPath, fmt.Sprintf(`{"type":"progress","sessionId":%q,"uuid":"p%d","timestamp":"2026-05-01T10:00:%02d.500Z","parentToolUseID":"toolu_52","data":{"type":"agent_progress","message":"step %d"}}`+"\n", sid, i, i%60, i))
						scanOK(t, w)
					}
					if n := st.reads["CallEvents"] - first; n != 0 {
						t.Errorf("60 progress lines of the parent read the matched call %d times, want none", n)
					}
					appendFile(t, parentPath, c.agentResult(52, "b1", "completed"))
					scanOK(t, w)
					if got := strings.Join(linkNotes(t, st, sid, child), ", "); got != "toolu_52 inferred=false" {
						t.Errorf("the parent named the child after 60 progress lines: links %q, want toolu_52 exact (given up: %v)", got, givenUp())
					}
					return
				}
				for i := range 60 {
					appendFile(t, parentPath, c.call(100+i)+c.result(100+i))
					scanOK(t, w)
				}
				if n := st.reads["CallEvents"] - first; n > 2 {
					t.Errorf("60 writes of other calls read the matched call %d times, want at most 2 (its placeholder result)", n)
				}
				// The call's results, never naming the child.
				// Each counted write reads the call once, and once more
				// when the child is read again (the call changed): 2 per
				// try, up to maxLinkTries (16).
				for range 80 {
					appendFile(t, parentPath, c.result(52))
					scanOK(t, w)
				}
				if n := st.reads["CallEvents"] - first; n > 2*16+2 {
					t.Errorf("80 results of the matched call naming no child read it %d times, want the wait given up (at most %d)", n, 2*16+2)
				}
				if !givenUp() {
					t.Errorf("health %+v: no row says the inferred wait was given up", w.SourceHealth())
				}
				if got := strings.Join(linkNotes(t, st, sid, child), ", "); got != "toolu_52 inferred=true" {
					t.Errorf("after giving up: links %q, want the inferred link kept", got)
				}
				// Neither the parent's writes nor a read of the child (it
				// grew) take the wait up again.
				before := st.reads["CallEvents"]
				appendFile(t, childPath, sidechain(c.call(901), "b1"))
				scanOK(t, w)
				for i := range 5 {
					appendFile(t, parentPath, c.call(200+i)+c.result(200+i))
					scanOK(t, w)
				}
				if n := st.reads["CallEvents"] - before; n != 0 {
					t.Errorf("after giving up, the child's read and 5 writes of the parent read the matched call %d times, want none", n)
				}
			})
		}
	}
}
