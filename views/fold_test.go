package views_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

func hdr() core.SessionHeader { return core.SessionHeader{ID: "s1", CreatedAt: t0, Cwd: "/work"} }

func TestFold_PairsAcrossTheLog(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Call("a", "note", `{}`).Call("b", "note", `{}`)
	b.Result("b", "B", false, nil, nil).Result("a", "A", false, nil, nil).StepEnd().TurnEnd(core.TurnCompleted)
	tl := views.Fold(hdr(), b.Events, presenters(t))
	for _, id := range []string{"a", "b"} {
		c := tl.CardsByCallID(id)
		if len(c) != 1 || c[0].State() != views.StateOK {
			t.Fatalf("card %s: %d cards, state %v", id, len(c), c)
		}
		if got := c[0].ResultTime - c[0].CallTime; got <= 0 {
			t.Errorf("card %s duration = %d, want > 0", id, got)
		}
	}
	if st := tl.Summary(); st.Calls != 2 || st.Results != 2 || st.Errors != 0 || st.Status != core.StatusIdle || tl.Pending() != 0 {
		t.Errorf("summary = %+v, pending %d", st, tl.Pending())
	}
}

func TestFold_StepEndStopsUnansweredCalls(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Call("a", "note", `{}`)
	tl := views.NewTimeline(hdr(), presenters(t))
	var last views.Update
	for i := range b.Events {
		tl.Apply(&b.Events[i])
	}
	if got := tl.CardsByCallID("a")[0].State(); got != views.StatePending {
		t.Fatalf("state before step/end = %s", got)
	}
	b.StepEnd()
	last = tl.Apply(&b.Events[len(b.Events)-1])
	if got := tl.CardsByCallID("a")[0].State(); got != views.StateStopped {
		t.Errorf("state after step/end = %s, want stopped", got)
	}
	found := false
	for _, n := range last.Morphs {
		if n.ElemID() == views.CallElemID("a") {
			found = true
		}
	}
	if !found {
		t.Errorf("step/end update does not morph the stopped card: %+v", last.Morphs)
	}
}

func TestFold_ReusedCallIDsGetDistinctElements(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Call("call_0", "note", `{}`).Result("call_0", "one", false, nil, nil).StepEnd()
	b.StepStart().Call("call_0", "note", `{}`).Result("call_0", "two", false, nil, nil).StepEnd()
	tl := views.Fold(hdr(), b.Events, presenters(t))
	cs := tl.CardsByCallID("call_0")
	if len(cs) != 2 || cs[0].ID == cs[1].ID {
		t.Fatalf("cards = %d, ids %q", len(cs), []string{cs[0].ID})
	}
	if cs[0].Result.Projection().Content.PlainText() != "one" || cs[1].Result.Projection().Content.PlainText() != "two" {
		t.Error("results paired with the wrong call")
	}
}

func TestFold_ReplacementResultKeepsTheCard(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Call("a", "note", `{}`).Result("a", "original", false, nil, nil)
	d := core.ToolResultData{Turn: 1, Step: 1, Message: core.NewToolResultMessage("r", "a", core.Text("[pruned]"), false)}
	e := b.Add(core.EventToolResult, d, &core.SurfaceOp{Replace: true, Start: 4, End: 4})
	e.SourceEventSeqs = []int64{4}
	tl := views.Fold(hdr(), b.Events, presenters(t))
	if got := tl.CardsByCallID("a")[0].Result.Projection().Content.PlainText(); got != "original" {
		t.Errorf("card result = %q, want the append-origin original", got)
	}
}

func TestFold_UnknownAndMalformedEventsAreRawRows(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	b.AddRaw("vendor/thing", []byte(`{"x":1}`), nil)
	b.AddRaw(core.EventToolCall, []byte(`{"callId":5}`), nil)
	tl := views.Fold(hdr(), b.Events, presenters(t))
	step := tl.Segments()[1].(*views.Step)
	var kinds []string
	for _, it := range step.Items {
		if r, ok := it.(*views.RawItem); ok {
			kinds = append(kinds, r.Kind)
		}
	}
	if strings.Join(kinds, ",") != "unknown,malformed" {
		t.Errorf("raw rows = %v, want unknown,malformed", kinds)
	}
}

func TestFold_StreamingTextAndFinalMessage(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Chunks("Hel", "lo **world**")
	tl := views.NewTimeline(hdr(), presenters(t))
	var u views.Update
	for i := range b.Events {
		v := tl.Apply(&b.Events[i])
		if i >= 2 {
			u.Merge(v)
		} else {
			u = v
		}
	}
	if len(u.Appends) != 1 {
		t.Fatalf("merged chunk updates append %d nodes, want 1 (the stream item)", len(u.Appends))
	}
	html, err := views.RenderUpdate(context.Background(), tl, u)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html[len(html)-1].HTML, "Hello **world**") {
		t.Errorf("streamed text not rendered plainly: %s", html[len(html)-1].HTML)
	}
	b.Assistant("Hello **world**")
	fu := tl.Apply(&b.Events[len(b.Events)-1])
	if len(fu.Appends) != 0 || len(fu.Morphs) != 1 {
		t.Fatalf("assistant/message after chunks: %d appends, %d morphs; want a morph of the stream item", len(fu.Appends), len(fu.Morphs))
	}
	p, _ := views.RenderUpdate(context.Background(), tl, fu)
	if !strings.Contains(p[0].HTML, "<strong>world</strong>") {
		t.Errorf("final message is not markdown: %s", p[0].HTML)
	}
}

func TestCallElemID(t *testing.T) {
	ids := []string{"call_1", `say "hi" there`, "a b", "a_20b", "ü", "x/y", ""}
	seen := map[string]string{}
	for _, id := range ids {
		e := views.CallElemID(id)
		for _, r := range e {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				t.Errorf("CallElemID(%q) = %q has %q", id, e, r)
			}
		}
		if prev, ok := seen[e]; ok {
			t.Errorf("CallElemID(%q) = CallElemID(%q) = %q", id, prev, e)
		}
		seen[e] = id
	}
	long := strings.Repeat("x", 500)
	if e := views.CallElemID(long); len(e) > 100 {
		t.Errorf("CallElemID of a long id is %d bytes", len(e))
	}
}

// TestFold_ElementIDsAreInjective: adversarial call ids — ones that look
// like another id's reuse suffix or like the hashed form of a long id —
// still give every card its own element id, and Card finds each by it.
func TestFold_ElementIDsAreInjective(t *testing.T) {
	long := strings.Repeat("long-call-id-", 10)
	sum := sha256.Sum256([]byte(long))
	hashed := hex.EncodeToString(sum[:12])
	ids := []string{
		"x", "x", "x", "x--2", "x--3", "x__2", "x_5f_5f2", "x_2", "x-_2",
		long, long, "h" + hashed, "_h" + hashed, "h" + hashed + "--2", "_h" + hashed + "__2",
		"", "", "--2", "__2", "_", "-", "a b", "a_20b", "a_20b", "ü", "_c3_bc",
		strings.Repeat("y", 95), strings.Repeat("y", 96), strings.Repeat("y", 97), strings.Repeat("y", 97),
	}
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	for _, id := range ids {
		b.Call(id, "note", `{}`).Result(id, "ok", false, nil, nil)
	}
	b.StepEnd()
	tl := views.Fold(hdr(), b.Events, presenters(t))
	seen := map[string]string{}
	n := 0
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		for i, c := range tl.CardsByCallID(id) {
			n++
			if prev, ok := seen[c.ID]; ok {
				t.Errorf("element id %q is used by call %q and by call %q (card %d)", c.ID, prev, id, i+1)
			}
			seen[c.ID] = id
			if got := tl.Card(c.ID); got != c {
				t.Errorf("Card(%q) does not find call %q's card %d", c.ID, id, i+1)
			}
			for _, r := range c.ID {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
					t.Errorf("element id %q has %q", c.ID, r)
				}
			}
		}
	}
	if n != len(ids) {
		t.Errorf("%d cards for %d calls", n, len(ids))
	}
	// Ids that escape to themselves keep their element ids.
	for id, want := range map[string]string{"c1": "call-c1", "call_0": "call-call_5f0", "toolu-01": "call-toolu-01"} {
		if got := views.CallElemID(id); got != want {
			t.Errorf("CallElemID(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestCoalescer: chunk updates are held and merged into one; another event
// releases them first, then its own update; Flush releases what is held.
func TestCoalescer(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Chunks("a", "b", "c").Call("c1", "note", `{}`).Chunks("d")
	tl := views.NewTimeline(hdr(), presenters(t))
	var co views.Coalescer
	var got [][2]int64
	emit := func(u views.Update) error { got = append(got, [2]int64{u.From, u.Seq}); return nil }
	for i := range b.Events {
		if err := co.Apply(tl, &b.Events[i], emit); err != nil {
			t.Fatal(err)
		}
	}
	if !co.Holding() {
		t.Fatal("the last chunk is not held")
	}
	if err := co.Flush(emit); err != nil || co.Holding() {
		t.Fatalf("Flush: %v, still holding %v", err, co.Holding())
	}
	// turn/start 0, step/start 1, chunks 2-5 (block-start + 3 deltas)
	// merged, the call 6, chunks 7-8 merged by Flush.
	want := [][2]int64{{0, 0}, {1, 1}, {2, 5}, {6, 6}, {7, 8}}
	if !slices.Equal(got, want) {
		t.Errorf("emitted (from, seq) %v, want %v", got, want)
	}
}

// TestFold_ParallelDecodeEqualsEventByEvent: a batch large enough for
// ApplyAll to decode in parallel folds to the very page event-by-event
// Apply builds — with streamed messages (chunks the final message
// supersedes, and a run it does not), malformed and unknown events,
// approvals, repeated call ids and a crash repair.
func TestFold_ParallelDecodeEqualsEventByEvent(t *testing.T) {
	b := coretest.NewBuilder(t0)
	for turn := 0; len(b.Events) < 3000; turn++ {
		b.TurnStart().StepStart().User("turn " + strings.Repeat("x", turn%7))
		b.Chunks("a", "b", "c").Assistant("abc", [3]string{"c1", "note", `{"title":"t"}`}, [3]string{"c2", "read", `{}`})
		b.Call("c1", "note", `{"title":"t"}`).Result("c1", "noted", false, map[string]any{"n": turn}, nil)
		b.Call("c2", "read", `{}`)
		b.Add(core.EventApprovalAsked, map[string]any{"id": "ap", "callId": "c2"}, nil)
		b.Add(core.EventApprovalDecided, map[string]any{"id": "ap", "outcome": "allowed-once"}, nil)
		b.Result("c2", "boom", true, nil, &core.ErrorInfo{Name: "E", Code: "X"})
		b.AddRaw(core.EventToolCall, []byte(`{"callId":5}`), nil) // malformed
		b.AddRaw("future/kind", []byte(`{"x":1}`), nil)
		b.StepEnd()
		if turn%3 == 0 {
			b.StepStart().Chunks("unfinished ", "stream") // no final message: its chunks are decoded
			b.StepEnd()
		}
		b.TurnEnd(core.TurnCompleted)
	}
	b.TurnStart().StepStart().Assistant("", [3]string{"z", "note", `{}`}).Call("z", "note", `{}`).Repair()
	events := b.Events
	render := func(tl *views.Timeline) string {
		patches, err := views.RenderPage(context.Background(), tl, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return patches[0].HTML
	}
	one := views.NewTimeline(hdr(), presenters(t))
	for i := range events {
		one.Apply(&events[i])
	}
	batch := views.Fold(hdr(), events, presenters(t))
	if got, want := render(batch), render(one); got != want {
		t.Errorf("the batch fold of %d events renders %d bytes, event by event %d; first difference at byte %d",
			len(events), len(got), len(want), firstDiff(got, want))
	}
	if !reflect.DeepEqual(batch.Summary(), one.Summary()) || batch.LastSeq() != one.LastSeq() {
		t.Errorf("summary %+v / %+v, last seq %d / %d", batch.Summary(), one.Summary(), batch.LastSeq(), one.LastSeq())
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestCallContextFoldsToTheSameCards: for every call of a log — reused call
// ids across steps, a call stopped by its step's end, approvals, a result
// without a logged call — the projections page folded from the call's
// context alone renders exactly as from the whole log.
func TestCallContextFoldsToTheSameCards(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go")
	b.Call("c1", "note", `{"title":"a"}`).Result("c1", "one", false, map[string]any{"n": 1}, nil)
	b.Call("c2", "read", `{"file_path":"x"}`) // never answered: stopped at step/end
	b.Call("c3", "bash", `{"command":"ls"}`)
	b.Add(core.EventApprovalAsked, map[string]any{"id": "ap", "callId": "c3"}, nil)
	b.Add(core.EventApprovalDecided, map[string]any{"id": "ap", "outcome": "allowed-once"}, nil)
	b.StepEnd().StepStart()
	b.Call("c1", "note", `{"title":"again"}`).Result("c1", "two", true, nil, &core.ErrorInfo{Name: "E", Code: "X"})
	b.Result("c3", "late", false, nil, nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	b.TurnStart().StepStart().Assistant("", [3]string{"c4", "note", `{}`}).Repair()
	// A turn still open (a watched session): c5's step ended without its
	// result, the next step runs.
	b.TurnStart().StepStart().Call("c5", "read", `{}`).StepEnd().StepStart()
	b.Call("c6", "bash", `{"command":"make"}`) // approved, running
	b.Add(core.EventApprovalAsked, map[string]any{"id": "ap6", "callId": "c6"}, nil)
	b.Add(core.EventApprovalDecided, map[string]any{"id": "ap6", "outcome": "allowed-once"}, nil)
	log := b.Events
	full := views.Fold(hdr(), log, presenters(t))
	render := func(tl *views.Timeline, c *views.Card) string {
		var sb strings.Builder
		if err := views.CallPage(views.NewCallPage(views.PageMeta{}, tl, c)).Render(context.Background(), &sb); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	n := 0
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		part := views.Fold(hdr(), views.CallContext(log, id), presenters(t))
		fullCards, partCards := full.CardsByCallID(id), part.CardsByCallID(id)
		if len(fullCards) == 0 || len(fullCards) != len(partCards) {
			t.Fatalf("%s: %d cards from the log, %d from its context", id, len(fullCards), len(partCards))
		}
		for i := range fullCards {
			n++
			if !fullCards[i].HasCall {
				// A call never logged (c4, crash repair): the whole log's card
				// takes its tool and arguments from the turn's assistant
				// request, which the context does not hold. The context's card
				// says so (no call), and callers then fold the whole log
				// (web's callEvents).
				if partCards[i].HasCall || partCards[i].Requested || !fullCards[i].Requested {
					t.Errorf("%s card %d: never logged, yet from the context HasCall=%v Requested=%v, from the log Requested=%v",
						id, i, partCards[i].HasCall, partCards[i].Requested, fullCards[i].Requested)
				}
				continue
			}
			if got, want := render(part, partCards[i]), render(full, fullCards[i]); got != want {
				t.Errorf("%s card %d: from the context %d bytes, from the log %d; first difference at %d", id, i, len(got), len(want), firstDiff(got, want))
			}
		}
	}
	if n != 7 {
		t.Errorf("compared %d cards, want 7", n)
	}
}
