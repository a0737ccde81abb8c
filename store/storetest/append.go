package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"prism/core"
)

func testAppendEvents(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustCreate(t, st, "s")
	if err := st.CreateSession(ctx, Header("s")); core.ErrorCode(err) != core.CodeConflict {
		t.Errorf("CreateSession(duplicate) = %v, want %s", err, core.CodeConflict)
	}
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, false)); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	tests := []struct {
		name   string
		id     string
		events []core.Event
		code   string
	}{
		{"seq gap", "s", []core.Event{Ev(9, core.EventTurnStart, `{"turn":2}`)}, core.CodeConflict},
		{"seq repeat", "s", []core.Event{Ev(7, core.EventTurnStart, `{"turn":2}`)}, core.CodeConflict},
		{"gap inside batch", "s", []core.Event{Ev(8, core.EventTurnStart, `{"turn":2}`), Ev(10, core.EventStepStart, `{}`)}, core.CodeConflict},
		{"missing session", "nope", []core.Event{Ev(0, core.EventTurnStart, `{"turn":1}`)}, core.CodeNotFound},
		{"not JSON", "s", []core.Event{Ev(8, core.EventTurnStart, `{"turn":`)}, core.CodeInvalid},
		{"negative zero", "s", []core.Event{Ev(8, core.EventTurnStart, `{"turn":-0}`)}, core.CodeInvalid},
		{"surfaceOp on a log-only type", "s", []core.Event{{Type: core.EventTurnStart, Seq: 8, Data: []byte(`{}`), SurfaceOp: core.AppendOp()}}, core.CodeInvalid},
		{"surface type without surfaceOp", "s", []core.Event{{Type: core.EventUserMessage, Seq: 8, Data: []byte(`{}`)}}, core.CodeInvalid},
		{"source seq from the future", "s", []core.Event{{Type: core.EventToolResult, Seq: 8, Data: []byte(`{}`), SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{8}}}, core.CodeInvalid},
		{"no type", "s", []core.Event{{Seq: 8, Data: []byte(`{}`)}}, core.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := st.AppendEvents(ctx, tt.id, tt.events)
			if got := core.ErrorCode(err); got != tt.code {
				t.Fatalf("AppendEvents = %v (code %s), want code %s", err, got, tt.code)
			}
			info, _ := st.Session(ctx, "s")
			if info.LastSeq != 7 {
				t.Errorf("after a rejected append LastSeq = %d, want 7 (nothing left behind)", info.LastSeq)
			}
		})
	}
	// Whitespace in data is compacted, so exports re-import byte for byte.
	if err := st.AppendEvents(ctx, "s", []core.Event{Ev(8, core.EventTurnStart, "{ \"turn\" : 2 }")}); err != nil {
		t.Fatal(err)
	}
	evs, _ := st.EventsAfter(ctx, "s", 7)
	if len(evs) != 1 || string(evs[0].Data) != `{"turn":2}` {
		t.Errorf("stored data = %s, want compact", evs[0].Data)
	}
}

func testConcurrentAppends(t *testing.T, e Engine) {
	const goroutines, appends = 16, 1000
	ctx := context.Background()
	st := e.open(t)
	for g := 0; g < goroutines; g++ {
		MustCreate(t, st, fmt.Sprint("s", g))
	}
	before := e.Commits(st)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("s", g)
			for i := 0; i < appends; i++ {
				ev := Ev(int64(i), core.EventTodoWrite, fmt.Sprintf(`{"todos":[{"content":"g%d i%d","status":"pending"}]}`, g, i))
				if err := st.AppendEvents(ctx, id, []core.Event{ev}); err != nil {
					errs <- fmt.Errorf("%s seq %d: %w", id, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g := 0; g < goroutines; g++ {
		l, err := st.LoadSession(ctx, fmt.Sprint("s", g))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Events) != appends {
			t.Fatalf("session s%d has %d events, want %d", g, len(l.Events), appends)
		}
		for i, e := range l.Events {
			want := fmt.Sprintf(`{"todos":[{"content":"g%d i%d","status":"pending"}]}`, g, i)
			if e.Seq != int64(i) || string(e.Data) != want {
				t.Fatalf("session s%d event %d = seq %d %s, want seq %d %s", g, i, e.Seq, e.Data, i, want)
			}
		}
	}
	commits := e.Commits(st) - before
	t.Logf("%d appends in %d commits (%.1f per commit)", goroutines*appends, commits, float64(goroutines*appends)/float64(commits))
	if commits >= goroutines*appends {
		t.Errorf("%d commits for %d appends: nothing was group-committed", commits, goroutines*appends)
	}
}

// testCloseDrainsAndRefuses: what was acknowledged before Close is
// there after reopening; a write after Close is refused as unavailable.
func testCloseDrainsAndRefuses(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	MustCreate(t, st, "s")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			id := fmt.Sprint("c", i)
			if errs[i] = st.CreateSession(ctx, Header(id)); errs[i] == nil {
				errs[i] = st.AppendEvents(ctx, id, TurnEvents(0, 1, false))
			}
		})
	}
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := st.AppendEvents(ctx, "s", TurnEvents(8, 2, false)); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("append after Close = %v, want code %s", err, core.CodeUnavailable)
	}
	st2 := reopen(Options{})
	if info, _ := st2.Session(ctx, "s"); info.LastSeq != 7 {
		t.Errorf("after reopen LastSeq = %d, want 7", info.LastSeq)
	}
	for i, err := range errs {
		info, _ := st2.Session(ctx, fmt.Sprint("c", i))
		if err != nil || info.LastSeq != 7 {
			t.Errorf("session c%d: %v, LastSeq %d after reopen; want acknowledged and 7", i, err, info.LastSeq)
		}
	}
}

// testRepairOpenTurns: startup repair closes the open turn of a live
// session nobody runs, once; it leaves closed turns and imported sessions
// alone.
func testRepairOpenTurns(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	turn := TurnEvents(0, 1, false)
	MustCreate(t, st, "open")
	if err := st.AppendEvents(ctx, "open", turn[:5]); err != nil { // up to the tool/call
		t.Fatal(err)
	}
	MustCreate(t, st, "done")
	if err := st.AppendEvents(ctx, "done", turn); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = reopen(Options{})
	repaired, err := st.RepairOpenTurns(ctx)
	if err != nil || len(repaired) != 1 || repaired[0] != "open" {
		t.Fatalf("RepairOpenTurns = %v, %v; want [open]", repaired, err)
	}
	l, err := st.LoadSession(ctx, "open")
	if err != nil {
		t.Fatal(err)
	}
	CheckRepair(t, turn[:5], l.Events, map[string]int64{"call_1": 4}, true)
	if l.Info.Status != core.StatusInterrupted {
		t.Errorf("status %s, want interrupted", l.Info.Status)
	}
	if again, err := st.RepairOpenTurns(ctx); err != nil || len(again) != 0 {
		t.Errorf("second repair = %v, %v; want nothing", again, err)
	}
	if info, _ := st.Session(ctx, "done"); info.LastSeq != 7 {
		t.Errorf("a closed session was changed: last seq %d", info.LastSeq)
	}
}
