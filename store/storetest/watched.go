package storetest

import (
	"context"
	"reflect"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/store"
)

// watchedWriter is a store a watcher writes into incrementally (db's and
// pgstore's: sources/watch.Store and sources/watch.Appender).
type watchedWriter interface {
	SyncWatched(ctx context.Context, h core.SessionHeader, events []core.Event) (outcome string, added int, err error)
	AppendWatched(ctx context.Context, h core.SessionHeader, w store.WatchedWrite) (outcome string, added int, err error)
}

// testAppendWatchedRewritesTheEnd writes a watched session's log as the
// watcher does when a step the file's end closed for now grows: an append
// that marks where the settled events end, then a rewrite of what follows
// the mark — done by the store in place (outcome replaced, a Replaced
// commit), not refused. The stored log, its summary and its search
// documents end up those of the final log written whole: the rewritten
// message's old words are not found, its new ones are. Without the mark
// (another store, a restart) the rewrite still holds, reading the summary
// before it from the log; a rewrite that would drop a result filed in the
// card of an earlier call is refused as a conflict.
func testAppendWatchedRewritesTheEnd(t *testing.T, e Engine) {
	ctx := context.Background()
	commits := make(chan store.Commit, 256)
	st0, _ := e.Open(t, Options{Committed: func(c store.Commit) { commits <- c }})
	st, ok := st0.(watchedWriter)
	if !ok {
		t.Fatalf("%s: the store has no AppendWatched", e.Name)
	}
	const id = "watched-rewrite"
	h := core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1000}
	settled := coretest.NewBuilder(1000)
	settled.TurnStart().StepStart().User("deploy the service").Assistant("checking", [3]string{"c1", "bash", `{"cmd":"ls"}`}).Call("c1", "bash", `{"cmd":"ls"}`).Result("c1", "main.go", false, nil, nil).StepEnd()
	base := settled.Events
	endFor := func(text string, calls ...string) []core.Event {
		b := coretest.NewBuilder(2000)
		b.Events = append([]core.Event(nil), base...)
		var asked [][3]string
		for _, c := range calls {
			asked = append(asked, [3]string{c, "bash", `{"cmd":"make"}`})
		}
		b.StepStart().Assistant(text, asked...)
		for _, c := range calls {
			b.Call(c, "bash", `{"cmd":"make"}`)
		}
		return b.Events
	}
	first, final := endFor("bravo", "c2", "c3"), endFor("charlie delta", "c2")
	{
		b := coretest.NewBuilder(3000)
		b.Events = final
		b.Result("c2", "built", false, nil, nil)
		final = b.Events
	}
	if _, _, err := st.SyncWatched(ctx, h, base[:2]); err != nil {
		t.Fatal(err)
	}
	if out, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: 2, From: 2, Events: first[2:], Mark: len(base)}); err != nil || out != store.ImportExtended {
		t.Fatalf("append: %s %v", out, err)
	}
	if got := searchSeqs(t, st0, "bravo"); len(got) != 1 {
		t.Fatalf("bravo before the rewrite: hits %v, want one", got)
	}
	out, added, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(first), From: len(base), Events: final[len(base):], Mark: len(base)})
	if err != nil || out != store.ImportReplaced || added != len(final)-len(base) {
		t.Fatalf("rewrite from the mark: %s %d %v, want replaced %d", out, added, err, len(final)-len(base))
	}
	// The commits delivered once a later session's creation has been
	// (and, where the engine orders only each session's commits, once
	// everything so far has been) hold the rewrite, as a replaced log.
	MustCreate(t, st0, "after-the-rewrite")
	replaced := false
	for c := range commits {
		replaced = replaced || c.SessionID == id && c.Replaced
		if c.SessionID == "after-the-rewrite" {
			break
		}
	}
	if e.Delivered != nil {
		e.Delivered(st0)
	drain:
		for {
			select {
			case c := <-commits:
				replaced = replaced || c.SessionID == id && c.Replaced
			default:
				break drain
			}
		}
	}
	if !replaced {
		t.Errorf("no Replaced commit of %s for the rewrite", id)
	}
	fresh, _ := e.Open(t, Options{})
	if _, _, err := fresh.(watchedWriter).SyncWatched(ctx, h, final); err != nil {
		t.Fatal(err)
	}
	same := func(when string) {
		t.Helper()
		got, err := st0.LoadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.LoadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) != len(want.Events) {
			t.Fatalf("%s: %d events stored, want %d", when, len(got.Events), len(want.Events))
		}
		for i := range got.Events {
			a, _ := got.Events[i].MarshalJSON()
			b, _ := want.Events[i].MarshalJSON()
			if string(a) != string(b) {
				t.Fatalf("%s: seq %d: %s\nwant %s", when, i, a, b)
			}
		}
		if !reflect.DeepEqual(got.Info.Summary, want.Info.Summary) || got.Info.UpdatedAt != want.Info.UpdatedAt {
			t.Errorf("%s: summary %+v\nwant %+v", when, got.Info.Summary, want.Info.Summary)
		}
		if got := searchSeqs(t, st0, "bravo"); len(got) != 0 {
			t.Errorf("%s: bravo hits %v, want none", when, got)
		}
		if got, want := searchSeqs(t, st0, "charlie"), searchSeqs(t, fresh, "charlie"); len(want) != 1 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: charlie hits %v, a whole write's %v", when, got, want)
		}
		CheckSearchIndex(t, st0)
	}
	same("after the rewrite")
	// A rewrite from where the store has no mark (past it): the summary
	// before it is read from the log.
	if out, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(final), From: len(base) + 1, Events: final[len(base)+1:], Mark: len(final)}); err != nil || out != store.ImportReplaced {
		t.Fatalf("the same end again, from past the mark: %s %v", out, err)
	}
	same("the same end written again")
	// A rewrite from before the result of c1 (filed in c1's card, a call
	// before it) is a conflict: the watcher reconciles the whole log.
	from := len(base) - 2
	if _, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(final), From: from, Events: final[from:], Mark: len(final)}); core.ErrorCode(err) != core.CodeConflict {
		t.Errorf("a rewrite dropping the result of an earlier call's card: err %v, want a conflict", err)
	}
	same("after the refused rewrite")
}
