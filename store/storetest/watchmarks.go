package storetest

import (
	"context"
	"reflect"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/store"
)

// watchedLog is a watched session's log of two steps, each a call and its
// result, the first result failed or the second: the two logs have the
// same summary at their end (one error, the same counts and times) but
// not after their first step (marked there).
func watchedLog(firstFails bool) (events []core.Event, mark int) {
	b := coretest.NewBuilder(1000)
	b.TurnStart().StepStart().User("deploy the service").Assistant("checking", [3]string{"c1", "bash", `{"cmd":"ls"}`}).Call("c1", "bash", `{"cmd":"ls"}`).Result("c1", "main.go", firstFails, nil, nil).StepEnd()
	mark = len(b.Events)
	b.StepStart().Assistant("building", [3]string{"c2", "bash", `{"cmd":"make"}`}).Call("c2", "bash", `{"cmd":"make"}`).Result("c2", "built", !firstFails, nil, nil).StepEnd()
	return b.Events, mark
}

// testWatchMarksGoWithTheirLog: a watched session's mark (the summary the
// store keeps where a watched write's settled events end) describes the
// log the watched write left, so it goes when the session is deleted, or
// its log is replaced, through the store. A session watched (marked),
// then deleted and created again with the same id and another log whose
// summary at its end is the same — or replaced with that log — and then
// rewritten from the same mark by the watcher gets the summary of its
// log as it is, not one built on the old log's summary at the mark; the
// rewrite keeps the mark it sets; and the store keeps no mark of a
// deleted session.
func testWatchMarksGoWithTheirLog(t *testing.T, e Engine) {
	ctx := context.Background()
	old, mark := watchedLog(true)
	fresh, _ := watchedLog(false)
	if !reflect.DeepEqual(core.Summarize(old), core.Summarize(fresh)) || reflect.DeepEqual(core.Summarize(old[:mark]), core.Summarize(fresh[:mark])) {
		t.Fatal("the two logs must end with the same summary and differ at the mark")
	}
	for _, how := range []string{"deleted and created again", "replaced"} {
		t.Run(how, func(t *testing.T) {
			st0, _ := e.Open(t, Options{})
			st, ok := st0.(watchedWriter)
			if !ok {
				t.Fatalf("%s: the store has no AppendWatched", e.Name)
			}
			const id = "watched-marks"
			h := core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1000}
			// Watched: two events, then the rest with the mark after
			// the first step.
			if _, _, err := st.SyncWatched(ctx, h, old[:2]); err != nil {
				t.Fatal(err)
			}
			if out, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: 2, From: 2, Events: old[2:], Mark: mark}); err != nil || out != store.ImportExtended {
				t.Fatalf("append: %s %v", out, err)
			}
			if n := e.WatchMarks(st0); n != 1 {
				t.Fatalf("%d marks kept after a marked watched write, want 1", n)
			}
			switch how {
			case "deleted and created again":
				if _, err := st0.DeleteSession(ctx, id); err != nil {
					t.Fatal(err)
				}
				if n := e.WatchMarks(st0); n != 0 {
					t.Errorf("%d marks kept after the watched session was deleted, want 0", n)
				}
				// Seen again: the same id, the other log (written as a
				// watcher's whole reconciliation writes it).
				if _, _, err := st0.SyncLog(ctx, h, fresh, store.SourceWatch, true); err != nil {
					t.Fatal(err)
				}
			case "replaced":
				if out, _, err := st.SyncWatched(ctx, h, fresh); err != nil || out != store.ImportReplaced {
					t.Fatalf("replace: %s %v", out, err)
				}
			}
			// The watcher rewrites the end from the mark it wrote.
			if out, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(fresh), From: mark, Events: fresh[mark:], Mark: mark}); err != nil || out != store.ImportReplaced {
				t.Fatalf("rewrite from the mark: %s %v", out, err)
			}
			if n := e.WatchMarks(st0); n != 1 {
				t.Errorf("%d marks kept after a rewrite from the mark, want 1 (the rewrite's own replace keeps the mark it sets)", n)
			}
			got, err := st0.LoadSession(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Events) != len(fresh) {
				t.Fatalf("%d events stored, want %d", len(got.Events), len(fresh))
			}
			for i := range got.Events {
				a, _ := got.Events[i].MarshalJSON()
				b, _ := fresh[i].MarshalJSON()
				if string(a) != string(b) {
					t.Fatalf("seq %d: %s\nwant %s", i, a, b)
				}
			}
			if want := core.Summarize(fresh); got.Info.Summary.Errors != want.Errors || got.Info.Summary.Results != want.Results {
				t.Errorf("summary after the rewrite: %d errors, %d results; the log's: %d errors, %d results", got.Info.Summary.Errors, got.Info.Summary.Results, want.Errors, want.Results)
			}
			if _, err := st0.DeleteSession(ctx, id); err != nil {
				t.Fatal(err)
			}
			if n := e.WatchMarks(st0); n != 0 {
				t.Errorf("%d marks kept after the watched session was deleted, want 0", n)
			}
		})
	}
}
